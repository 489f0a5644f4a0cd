"""TOSA graphs as SPIR-V graph modules (SPV_ARM_graph, SPV_ARM_tensors, the TOSA.001000.1 instruction set): the
form of a VGF GRAPH segment. `encode` writes a Block as one module (large constants as graph constants), `decode`
reads model-converter's modules and ours back into a Block; constants.py: the constant graphs a VGF fills its
graph constants with (written by tosa_vk/formats/vgf_export.py, read by tosa_vk/formats/vgf_run.py)."""

from .decode import Decoded, decode, decode_module
from .encode import INLINE_ELEMENTS, encode
from .instructions import BY_OPCODE, EXT_SET, INSTRUCTIONS, Instruction, tensor_array, tensor_bytes

__all__ = [
    "BY_OPCODE",
    "Decoded",
    "EXT_SET",
    "INLINE_ELEMENTS",
    "INSTRUCTIONS",
    "Instruction",
    "decode",
    "decode_module",
    "encode",
    "tensor_array",
    "tensor_bytes",
]
