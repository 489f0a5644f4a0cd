"""Other toolchains' files in and out: VGF (graph and compute segments, export and run), SPIR-V graph
modules, ExecuTorch .pte, TFLite import (TOSA MLIR is read by ir/mlir.py)."""
