"""Writes resources/tflite/tiny_cnn.tflite and tiny_cnn_int8.tflite: a small CNN as TFLite flatbuffers, float32
and int8 (TFLite's own quantization: per-tensor activations, per-channel weights, int32 bias), built with the
`tflite` package's generated schema classes (pip install tflite==2.18.0; no TensorFlow), for `tosa-vk import`'s
tests and the README's "From TFLite" section.

    input [1, 8, 8, 3] -> CONV_2D 3x3 SAME + fused RELU (4 filters) -> MAX_POOL_2D 2x2 -> SOFTMAX -> output [1, 4, 4, 4]

The weights come from a seeded generator (WEIGHT_SEED); tests/test_tflite_import.py computes the expected output
in numpy from the same seed. Run: python scripts/make_tflite_fixture.py
"""

from __future__ import annotations

import importlib
from pathlib import Path

import flatbuffers
import numpy as np

FOLDER = Path(__file__).resolve().parent.parent / "resources" / "tflite"
WEIGHT_SEED = 36
# the int8 model's activations: (scale, zero point) of its input, the convolution's (and the pool's) output, and the
# softmax output (TFLite's int8 SOFTMAX requires 1/256, -128)
INPUT_Q, CONV_Q, OUTPUT_Q = (1 / 32, 0), (0.05, -128), (1 / 256, -128)


def weights() -> tuple[np.ndarray, np.ndarray]:
    """The CONV_2D filter (OHWI, as TFLite stores it) and bias."""
    rng = np.random.default_rng(WEIGHT_SEED)
    return rng.normal(0, 0.5, (4, 3, 3, 3)).astype(np.float32), rng.normal(0, 0.1, 4).astype(np.float32)


def _ints(b: flatbuffers.Builder, start, values: list[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def _offsets(b: flatbuffers.Builder, start, offsets: list[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def build(int8: bool = False) -> bytes:
    # the generated modules (the package's top level re-exports their classes under the same names)
    (ActivationFunctionType, Buffer, BuiltinOperator, BuiltinOptions, Conv2DOptions, Model, Operator, OperatorCode,
     Padding, Pool2DOptions, QuantizationParameters, SoftmaxOptions, SubGraph, Tensor, TensorType) = (
        importlib.import_module(f"tflite.{name}")
        for name in ("ActivationFunctionType", "Buffer", "BuiltinOperator", "BuiltinOptions", "Conv2DOptions", "Model",
                     "Operator", "OperatorCode", "Padding", "Pool2DOptions", "QuantizationParameters",
                     "SoftmaxOptions", "SubGraph", "Tensor", "TensorType")
    )  # fmt: skip
    b = flatbuffers.Builder(4096)
    filt, bias = weights()
    filt_q = bias_q = None  # the int8 model's (scales, zero points, axis) of the filter and the bias
    if int8:  # symmetric per output channel, bias in int32 at input scale x filter scale (TFLite's scheme)
        w_scale = np.abs(filt).reshape(4, -1).max(axis=1) / 127
        filt = np.rint(filt / w_scale[:, None, None, None]).astype(np.int8)
        bias = np.rint(bias / (INPUT_Q[0] * w_scale)).astype(np.int32)
        filt_q = (list(w_scale), [0] * 4, 0)
        bias_q = (list(INPUT_Q[0] * w_scale), [0] * 4, 0)
    # buffers: 0 the empty sentinel TFLite requires, 1 the filter, 2 the bias
    buffers = []
    for data in (b"", filt.tobytes(), bias.tobytes()):
        vec = b.CreateByteVector(data) if data else None
        Buffer.BufferStart(b)
        if vec is not None:
            Buffer.BufferAddData(b, vec)
        buffers.append(Buffer.BufferEnd(b))
    # tensors: (name, shape, buffer, int8 model's type, its quantization (scales, zero points, axis))
    types = TensorType.TensorType
    per_tensor = {k: ([q[0]], [q[1]], 0) for k, q in (("in", INPUT_Q), ("conv", CONV_Q), ("out", OUTPUT_Q))}
    specs = [
        ("input", [1, 8, 8, 3], 0, types.INT8, per_tensor["in"]),
        ("conv_filter", [4, 3, 3, 3], 1, types.INT8, filt_q),
        ("conv_bias", [4], 2, types.INT32, bias_q),
        ("conv_relu", [1, 8, 8, 4], 0, types.INT8, per_tensor["conv"]),
        ("pool", [1, 4, 4, 4], 0, types.INT8, per_tensor["conv"]),
        ("output", [1, 4, 4, 4], 0, types.INT8, per_tensor["out"]),
    ]
    tensors = []
    for name, shape, buffer, int_type, quant in specs:
        name_off = b.CreateString(name)
        shape_off = _ints(b, Tensor.TensorStartShapeVector, shape)
        quant_off = None
        if int8:
            assert quant is not None
            scales, zero_points, axis = quant
            QuantizationParameters.QuantizationParametersStartScaleVector(b, len(scales))
            for v in reversed(scales):
                b.PrependFloat32(float(v))
            scale_off = b.EndVector()
            QuantizationParameters.QuantizationParametersStartZeroPointVector(b, len(zero_points))
            for v in reversed(zero_points):
                b.PrependInt64(int(v))
            zp_off = b.EndVector()
            QuantizationParameters.QuantizationParametersStart(b)
            QuantizationParameters.QuantizationParametersAddScale(b, scale_off)
            QuantizationParameters.QuantizationParametersAddZeroPoint(b, zp_off)
            QuantizationParameters.QuantizationParametersAddQuantizedDimension(b, axis)
            quant_off = QuantizationParameters.QuantizationParametersEnd(b)
        Tensor.TensorStart(b)
        Tensor.TensorAddShape(b, shape_off)
        Tensor.TensorAddType(b, int_type if int8 else types.FLOAT32)
        Tensor.TensorAddBuffer(b, buffer)
        Tensor.TensorAddName(b, name_off)
        if quant_off is not None:
            Tensor.TensorAddQuantization(b, quant_off)
        tensors.append(Tensor.TensorEnd(b))
    # operator codes: CONV_2D, MAX_POOL_2D, SOFTMAX
    codes = []
    for code in (BuiltinOperator.BuiltinOperator.CONV_2D, BuiltinOperator.BuiltinOperator.MAX_POOL_2D,
                 BuiltinOperator.BuiltinOperator.SOFTMAX):  # fmt: skip
        OperatorCode.OperatorCodeStart(b)
        OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddBuiltinCode(b, code)
        OperatorCode.OperatorCodeAddVersion(b, 1)
        codes.append(OperatorCode.OperatorCodeEnd(b))
    Conv2DOptions.Conv2DOptionsStart(b)
    Conv2DOptions.Conv2DOptionsAddPadding(b, Padding.Padding.SAME)
    Conv2DOptions.Conv2DOptionsAddStrideW(b, 1)
    Conv2DOptions.Conv2DOptionsAddStrideH(b, 1)
    Conv2DOptions.Conv2DOptionsAddDilationWFactor(b, 1)
    Conv2DOptions.Conv2DOptionsAddDilationHFactor(b, 1)
    Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(b, ActivationFunctionType.ActivationFunctionType.RELU)
    conv_options = Conv2DOptions.Conv2DOptionsEnd(b)
    Pool2DOptions.Pool2DOptionsStart(b)
    Pool2DOptions.Pool2DOptionsAddPadding(b, Padding.Padding.VALID)
    Pool2DOptions.Pool2DOptionsAddStrideW(b, 2)
    Pool2DOptions.Pool2DOptionsAddStrideH(b, 2)
    Pool2DOptions.Pool2DOptionsAddFilterWidth(b, 2)
    Pool2DOptions.Pool2DOptionsAddFilterHeight(b, 2)
    pool_options = Pool2DOptions.Pool2DOptionsEnd(b)
    SoftmaxOptions.SoftmaxOptionsStart(b)
    SoftmaxOptions.SoftmaxOptionsAddBeta(b, 1.0)
    softmax_options = SoftmaxOptions.SoftmaxOptionsEnd(b)
    operators = []
    for code, ins, outs, kind, options in (
        (0, [0, 1, 2], [3], BuiltinOptions.BuiltinOptions.Conv2DOptions, conv_options),
        (1, [3], [4], BuiltinOptions.BuiltinOptions.Pool2DOptions, pool_options),
        (2, [4], [5], BuiltinOptions.BuiltinOptions.SoftmaxOptions, softmax_options),
    ):
        ins_off = _ints(b, Operator.OperatorStartInputsVector, ins)
        outs_off = _ints(b, Operator.OperatorStartOutputsVector, outs)
        Operator.OperatorStart(b)
        Operator.OperatorAddOpcodeIndex(b, code)
        Operator.OperatorAddInputs(b, ins_off)
        Operator.OperatorAddOutputs(b, outs_off)
        Operator.OperatorAddBuiltinOptionsType(b, kind)
        Operator.OperatorAddBuiltinOptions(b, options)
        operators.append(Operator.OperatorEnd(b))
    tensors_off = _offsets(b, SubGraph.SubGraphStartTensorsVector, tensors)
    inputs_off = _ints(b, SubGraph.SubGraphStartInputsVector, [0])
    outputs_off = _ints(b, SubGraph.SubGraphStartOutputsVector, [5])
    operators_off = _offsets(b, SubGraph.SubGraphStartOperatorsVector, operators)
    name_off = b.CreateString("main")
    SubGraph.SubGraphStart(b)
    SubGraph.SubGraphAddTensors(b, tensors_off)
    SubGraph.SubGraphAddInputs(b, inputs_off)
    SubGraph.SubGraphAddOutputs(b, outputs_off)
    SubGraph.SubGraphAddOperators(b, operators_off)
    SubGraph.SubGraphAddName(b, name_off)
    subgraph = SubGraph.SubGraphEnd(b)
    codes_off = _offsets(b, Model.ModelStartOperatorCodesVector, codes)
    subgraphs_off = _offsets(b, Model.ModelStartSubgraphsVector, [subgraph])
    buffers_off = _offsets(b, Model.ModelStartBuffersVector, buffers)
    description = b.CreateString("tosa_vk test fixture: scripts/make_tflite_fixture.py")
    Model.ModelStart(b)
    Model.ModelAddVersion(b, 3)
    Model.ModelAddOperatorCodes(b, codes_off)
    Model.ModelAddSubgraphs(b, subgraphs_off)
    Model.ModelAddDescription(b, description)
    Model.ModelAddBuffers(b, buffers_off)
    b.Finish(Model.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


if __name__ == "__main__":
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, int8 in (("tiny_cnn.tflite", False), ("tiny_cnn_int8.tflite", True)):
        (FOLDER / name).write_bytes(build(int8))
        print(f"wrote {FOLDER / name} ({(FOLDER / name).stat().st_size} bytes)")
