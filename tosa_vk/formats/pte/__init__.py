"""ExecuTorch programs (.pte): the reader (program.py, with the accessors in fbs/ that flatc generates from
ExecuTorch's schema in schema/) and the host operators its plans call between delegates (host_ops.py, numpy).
tosa_vk/backends/pte.py runs a plan as a Model: TOSA delegates on the chosen backend, host operators here."""

from .program import Delegate, DelegateRun, Kernel, Plan, TensorValue, load_program, read_program

__all__ = ["Delegate", "DelegateRun", "Kernel", "Plan", "TensorValue", "load_program", "read_program"]
