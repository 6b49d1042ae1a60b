#!/usr/bin/python3
"""The quantization ops against a numpy implementation of the ONNX spec, bit for bit: QLinearConv
and ConvInteger on odd channel counts, padding, strides, dilation, groups and depthwise, uint8
and int8 activations, per-channel weight scales and zero points, int32 bias; QLinearMatMul and
MatMulInteger with batch axes and per-row/per-column zero points; QuantizeLinear and
DequantizeLinear per tensor and per axis; DynamicQuantizeLinear. Integers must be equal, floats
equal to the last bit (the same float32 operations in the same order).

Usage: quantized_ops.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

import onnx_case

ONNX_TYPE = {np.dtype(np.uint8): onnx.TensorProto.UINT8, np.dtype(np.int8): onnx.TensorProto.INT8,
             np.dtype(np.int32): onnx.TensorProto.INT32, np.dtype(np.float32): onnx.TensorProto.FLOAT}
RANGE = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def conv_int32(x, w, stride, pad, dilation, group):
    """int32 NCHW convolution by explicit windows."""
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilation:i * dilation + stride * oh:stride,
                           j * dilation:j * dilation + stride * ow:stride]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch,
                                                         w[g * mg:(g + 1) * mg, :, i, j].astype(np.int64))
    return out.astype(np.int32)


def requantize(acc, multiplier, zp, dtype):
    lo, hi = RANGE[np.dtype(dtype)]
    r = np.rint(acc.astype(np.float32) * multiplier) + np.float32(zp)
    return np.clip(r, lo, hi).astype(dtype)


def rand_q(rng, shape, dtype):
    lo, hi = RANGE[np.dtype(dtype)]
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def qlinear_conv_case(rng, name, n, c, h, w, m, k, stride, pad, dilation, group, xdt, per_channel):
    x = rand_q(rng, (n, c, h, w), xdt)
    wt = rand_q(rng, (m, c // group, k, k), np.int8)
    xs, ys = np.float32(rng.uniform(0.01, 0.05)), np.float32(rng.uniform(0.05, 0.2))
    ws = rng.uniform(0.005, 0.03, m if per_channel else 1).astype(np.float32)
    xzp = np.array(rng.integers(*RANGE[np.dtype(xdt)]), xdt)
    wzp = np.zeros(m if per_channel else 1, np.int8)
    yzp = np.array(rng.integers(0, 256), np.uint8)
    bias = rng.integers(-2000, 2000, m).astype(np.int32)
    acc = conv_int32(x.astype(np.int32) - np.int32(xzp), wt.astype(np.int32), stride, pad,
                     dilation, group) + bias.reshape(1, m, 1, 1)
    mult = (xs * ws / ys).astype(np.float32).reshape(1, -1, 1, 1)
    want = requantize(acc, mult, yzp, np.uint8)
    inits = {"x_scale": xs, "x_zero_point": xzp, "w": wt, "w_scale": ws if per_channel else ws[0],
             "w_zero_point": wzp if per_channel else wzp[0], "y_scale": ys, "y_zero_point": yzp,
             "B": bias}
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zero_point", "w", "w_scale",
                                            "w_zero_point", "y_scale", "y_zero_point", "B"], ["y"],
                            name=name, strides=[stride, stride], pads=[pad] * 4,
                            dilations=[dilation, dilation], group=group)
    return name, [node], {"x": x}, inits, {"y": want}


def qdq_conv_case(rng, name, n, c, h, w, m, k, stride, pad, dilation, zx, xdt=np.uint8):
    """A QDQ convolution as quantizers emit it (Q -> DQ around the activation, DQ of int8
    per-channel weights and an int32 bias, Q after): kiln runs it as an integer convolution on the
    dot-product kernels scaled to float, float(acc) x (sx x sw) + bias, then quantized; the same
    float32 operations here. C is not a multiple of 4 and Co not of 16 in some cases (padded)."""
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rand_q(rng, (m, c, k, k), np.int8)
    sx, sy = np.float32(rng.uniform(0.01, 0.03)), np.float32(rng.uniform(0.05, 0.2))
    sw = rng.uniform(0.005, 0.03, m).astype(np.float32)
    sb = (sx * sw).astype(np.float32)
    bias = rng.integers(-2000, 2000, m).astype(np.int32)
    zy = np.array(rng.integers(0, 256), np.uint8)
    lo, hi = RANGE[np.dtype(xdt)]
    xq = np.clip(np.rint(x / sx) + np.float32(zx), lo, hi).astype(xdt)
    acc = conv_int32(xq.astype(np.int32) - zx, wt.astype(np.int32), stride, pad, dilation, 1)
    y = acc.astype(np.float32) * sb.reshape(1, m, 1, 1) + \
        (bias.astype(np.float32) * sb).reshape(1, m, 1, 1)
    want = np.clip(np.rint(y / sy) + np.float32(zy), 0, 255).astype(np.uint8)
    inits = {"sx": sx, "zx": np.array(zx, xdt), "w": wt, "sw": sw, "zw": np.zeros(m, np.int8),
             "b": bias, "sb": sb, "zb": np.zeros(m, np.int32), "sy": sy, "zy": zy}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="q_x"),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xdq"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wdq"], name="dq_w", axis=0),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bdq"], name="dq_b", axis=0),
             helper.make_node("Conv", ["xdq", "wdq", "bdq"], ["y"], name=name,
                              strides=[stride, stride], pads=[pad] * 4,
                              dilations=[dilation, dilation]),
             helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"], name="q_y")]
    return name, nodes, {"x": x}, inits, {"yq": want}


def qdq_maxpool_case(rng):
    """A QDQ stem as quantize.py writes it: Q -> DQ -> Conv -> Q -> DQ -> Relu -> MaxPool(3, 2,
    pad 1). kiln pools the bytes and dequantizes after (max and ReLU commute with dequantizing):
    the same floats as pooling the dequantized values."""
    name, nodes, inputs, inits, want = qdq_conv_case(rng, "qdq_conv_relu_maxpool", 1, 3, 20, 18,
                                                     16, 3, 2, 1, 1, 5)
    sy, zy = inits["sy"], inits["zy"]
    deq = (want["yq"].astype(np.int32) - np.int32(zy)).astype(np.float32) * sy
    r = np.maximum(deq, np.float32(0))
    n, c, h, w = r.shape
    padded = np.full((n, c, h + 2, w + 2), -np.inf, np.float32)
    padded[:, :, 1:-1, 1:-1] = r
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    pooled = np.full((n, c, oh, ow), -np.inf, np.float32)
    for i in range(3):
        for j in range(3):
            pooled = np.maximum(pooled, padded[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2])
    nodes = nodes + [
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["ydq"], name="dq_y"),
        helper.make_node("Relu", ["ydq"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="maxpool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1])]
    return name, nodes, inputs, inits, {"pool": pooled}


def qdq_linear_case(rng, name, op, m, k, n, za):
    """A QDQ Gemm (transB=1, int32 bias) or MatMul: uint8 activations per tensor, int8 weights
    per output column; kiln runs float(acc) x (sa x sw) (+ bias) on the dot-product kernels."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    sa = np.float32(rng.uniform(0.01, 0.03))
    aq = np.clip(np.rint(a / sa) + np.float32(za), 0, 255).astype(np.uint8)
    wt = rand_q(rng, (n, k) if op == "Gemm" else (k, n), np.int8)
    sw = rng.uniform(0.005, 0.03, n).astype(np.float32)
    w_kn = wt.T if op == "Gemm" else wt
    acc = (aq.astype(np.int64) - za) @ w_kn.astype(np.int64)
    y = acc.astype(np.float32) * (sa * sw).astype(np.float32)
    inits = {"sa": sa, "za": np.array(za, np.uint8), "w": wt, "sw": sw, "zw": np.zeros(n, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["a", "sa", "za"], ["aq"], name="q_a"),
             helper.make_node("DequantizeLinear", ["aq", "sa", "za"], ["adq"], name="dq_a"),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wdq"], name="dq_w",
                              axis=0 if op == "Gemm" else 1)]
    if op == "Gemm":
        bias = rng.integers(-3000, 3000, n).astype(np.int32)
        sb = (sa * sw).astype(np.float32)
        inits.update({"b": bias, "sb": sb, "zb": np.zeros(n, np.int32)})
        nodes += [helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bdq"], name="dq_b", axis=0),
                  helper.make_node("Gemm", ["adq", "wdq", "bdq"], ["y"], name=name, transB=1)]
        # kiln fuses the scale and the bias add into one multiply-add (rounded once): the exact
        # product in float64, plus the bias, rounded to float32.
        y = (acc.astype(np.float32).astype(np.float64) * (sa * sw).astype(np.float32)
             + (bias.astype(np.float32) * sb).astype(np.float64)).astype(np.float32)
    else:
        nodes.append(helper.make_node("MatMul", ["adq", "wdq"], ["y"], name=name))
    return name, nodes, {"a": a}, inits, {"y": y.astype(np.float32)}


def conv_integer_case(rng):
    x = rand_q(rng, (1, 5, 9, 8), np.uint8)
    wt = rand_q(rng, (7, 5, 3, 3), np.uint8)
    xzp, wzp = np.array(131, np.uint8), np.array(3, np.uint8)
    want = conv_int32(x.astype(np.int32) - 131, wt.astype(np.int32) - 3, 2, 1, 1, 1)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zero_point", "w_zero_point"], ["y"],
                            name="conv_integer", strides=[2, 2], pads=[1, 1, 1, 1])
    return "conv_integer", [node], {"x": x}, {"w": wt, "x_zero_point": xzp, "w_zero_point": wzp}, \
        {"y": want}


def qlinear_matmul_case(rng):
    a = rand_q(rng, (3, 5, 37), np.int8)
    b = rand_q(rng, (3, 37, 11), np.int8)
    azp, bzp, yzp = np.array(-3, np.int8), np.array(2, np.int8), np.array(-7, np.int8)
    as_, bs, ys = np.float32(0.02), np.float32(0.03), np.float32(0.4)
    acc = np.matmul(a.astype(np.int32) + 3, b.astype(np.int32) - 2)
    want = requantize(acc, np.float32(as_ * bs / ys), yzp, np.int8)
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero_point", "b", "b_scale",
                                              "b_zero_point", "y_scale", "y_zero_point"], ["y"],
                            name="qlinear_matmul")
    return "qlinear_matmul_batched", [node], {"a": a, "b": b}, \
        {"a_scale": as_, "a_zero_point": azp, "b_scale": bs, "b_zero_point": bzp, "y_scale": ys,
         "y_zero_point": yzp}, {"y": want}


def matmul_integer_case(rng):
    a = rand_q(rng, (6, 19), np.uint8)
    b = rand_q(rng, (19, 13), np.int8)
    azp = rng.integers(0, 256, 6).astype(np.uint8)     # per row
    bzp = rng.integers(-128, 128, 13).astype(np.int8)  # per column
    want = np.matmul(a.astype(np.int32) - azp.astype(np.int32)[:, None],
                     b.astype(np.int32) - bzp.astype(np.int32)[None, :])
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zero_point", "b_zero_point"], ["y"],
                            name="matmul_integer")
    return "matmul_integer_per_row_col", [node], {"a": a, "b": b}, \
        {"a_zero_point": azp, "b_zero_point": bzp}, {"y": want}


def matmul_integer_weights_case(rng, name, shape_a, n, azp_per_row, bzp):
    """uint8 activations times constant int8 weights: the dot-product kernels (vpdpbusd on a
    VNNI CPU), zero points applied after the product; N not a multiple of the 16-column panel."""
    k = shape_a[-1]
    a = rand_q(rng, shape_a, np.uint8)
    b = rand_q(rng, (k, n), np.int8)
    azp = (rng.integers(0, 256, shape_a[-2]) if azp_per_row else rng.integers(0, 256, ())).astype(np.uint8)
    zb = rng.integers(-128, 128, n).astype(np.int8) if bzp else np.zeros((), np.int8)
    za = azp.astype(np.int32)[:, None] if azp_per_row else azp.astype(np.int32)
    want = np.matmul(a.astype(np.int32) - za, b.astype(np.int32) - zb.astype(np.int32))
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zero_point", "b_zero_point"], ["y"],
                            name="matmul_integer")
    return name, [node], {"a": a}, {"b": b, "a_zero_point": azp, "b_zero_point": zb}, \
        {"y": want.astype(np.int32)}


def qlinear_matmul_weights_case(rng):
    """QLinearMatMul with uint8 activations and constant int8 weights (per-column scales)."""
    a = rand_q(rng, (2, 9, 64), np.uint8)
    b = rand_q(rng, (64, 40), np.int8)
    azp, bzp, yzp = np.array(131, np.uint8), np.zeros(40, np.int8), np.array(120, np.uint8)
    as_, ys = np.float32(0.02), np.float32(0.5)
    bs = (rng.random(40) * 0.02 + 0.01).astype(np.float32)
    acc = np.matmul(a.astype(np.int32) - 131, b.astype(np.int32))
    want = requantize(acc, (as_ * bs) / ys, yzp, np.uint8)
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero_point", "b", "b_scale",
                                              "b_zero_point", "y_scale", "y_zero_point"], ["y"],
                            name="qlinear_matmul")
    return "qlinear_matmul_weights", [node], {"a": a}, \
        {"a_scale": as_, "a_zero_point": azp, "b": b, "b_scale": bs, "b_zero_point": bzp,
         "y_scale": ys, "y_zero_point": yzp}, {"y": want}


def quantize_roundtrip_case(rng):
    x = (rng.standard_normal((2, 4, 3)) * 3).astype(np.float32)
    x[0, 0, 0] = 0.5 * 0.25  # a tie: 0.5 -> 0 (half to even)
    s = np.array([0.25, 0.1, 0.05, 0.5], np.float32)
    zp = np.array([0, 10, -20, 5], np.int8)
    q = np.clip(np.rint(x / s.reshape(1, 4, 1)) + zp.reshape(1, 4, 1), -128, 127).astype(np.int8)
    dq = (q.astype(np.int32) - zp.reshape(1, 4, 1)).astype(np.float32) * s.reshape(1, 4, 1)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quantize", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["dq"], name="dequantize", axis=1)]
    return "quantize_dequantize_per_axis", nodes, {"x": x}, {"s": s, "zp": zp}, {"q": q, "dq": dq}


def dynamic_case(rng):
    x = (rng.standard_normal((4, 9)) + 0.7).astype(np.float32)
    lo, hi = min(0.0, x.min()), max(0.0, x.max())
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    zp = np.clip(np.rint(-np.float32(lo) / scale), 0, 255).astype(np.uint8)
    y = np.clip(np.rint(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zp"], name="dynamic")
    return "dynamic_quantize_linear", [node], {"x": x}, {}, {"y": y, "scale": scale, "zp": zp}


def make_model(case):
    """The case's ONNX model (inputs, initializers and outputs typed from the arrays)."""
    name, nodes, inputs, inits, want = case
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, ONNX_TYPE[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, ONNX_TYPE[np.asarray(v).dtype], np.asarray(v).shape)
         for k, v in want.items()],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m


def differences(out, want):
    """What differs between the outputs and the expected arrays (empty: bit for bit equal)."""
    problems = []
    for k, v in want.items():
        got = out[k]
        v = np.asarray(v)
        if got.dtype != v.dtype or got.shape != v.shape:
            problems.append(f"{k}: {got.dtype}{got.shape}, expected {v.dtype}{v.shape}")
        elif not np.array_equal(got, v):
            bad = int((got != v).sum())
            problems.append(f"{k}: {bad} of {v.size} differ (max |diff| "
                            f"{np.abs(got.astype(np.float64) - v.astype(np.float64)).max()})")
    return problems


def dot_product_cases(rng):
    """The cases that run on the integer dot-product kernels (also run on AArch64 under qemu)."""
    return [
        qdq_conv_case(rng, "qdq_conv_3x3", 1, 16, 12, 10, 32, 3, 1, 1, 1, 128),
        qdq_conv_case(rng, "qdq_conv_stem_stride2", 2, 3, 17, 15, 20, 7, 2, 3, 1, 0),
        qdq_conv_case(rng, "qdq_conv_odd_dilated", 1, 13, 11, 11, 9, 3, 1, 2, 2, 77),
        qdq_conv_case(rng, "qdq_conv_pointwise", 1, 24, 7, 7, 40, 1, 1, 0, 1, 3),
        qdq_conv_case(rng, "qdq_conv_int8_activations", 1, 8, 9, 9, 16, 3, 1, 1, 1, -5, np.int8),
        matmul_integer_weights_case(rng, "matmul_integer_weights", (37, 96), 45, False, False),
        matmul_integer_weights_case(rng, "matmul_integer_weights_zero_points", (2, 7, 20), 33, True, True),
        matmul_integer_weights_case(rng, "matmul_integer_weights_wide", (64, 256), 128, False, True),
        qlinear_matmul_weights_case(rng),
        qdq_linear_case(rng, "qdq_gemm", "Gemm", 5, 64, 40, 131),
        qdq_linear_case(rng, "qdq_matmul", "MatMul", 9, 32, 17, 0),
        qdq_maxpool_case(rng),
    ]


def run(kilnc, kiln_run, work, case):
    name, nodes, inputs, inits, want = case
    m = make_model(case)
    out = onnx_case.run_model(kilnc, kiln_run, os.path.join(work, name), m, inputs)
    problems = differences(out, want)
    print(f"{name:34s} {'ok' if not problems else 'FAILED: ' + '; '.join(problems)}")
    return not problems


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: quantized_ops.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(11)
    cases = [
        qlinear_conv_case(rng, "qlinear_conv_odd_pad_stride", 2, 5, 11, 9, 7, 3, 2, 1, 1, 1, np.uint8, True),
        qlinear_conv_case(rng, "qlinear_conv_int8_dilated", 1, 3, 10, 10, 6, 3, 1, 2, 2, 1, np.int8, False),
        qlinear_conv_case(rng, "qlinear_conv_groups", 1, 6, 8, 7, 9, 3, 1, 1, 1, 3, np.uint8, True),
        qlinear_conv_case(rng, "qlinear_conv_depthwise", 1, 13, 9, 9, 13, 3, 2, 1, 1, 13, np.uint8, True),
        qlinear_conv_case(rng, "qlinear_conv_pointwise", 1, 17, 6, 5, 11, 1, 1, 0, 1, 1, np.int8, True),
        conv_integer_case(rng), qlinear_matmul_case(rng), matmul_integer_case(rng),
        *dot_product_cases(rng),
        quantize_roundtrip_case(rng), dynamic_case(rng),
    ]
    ok = [run(kilnc, kiln_run, work, c) for c in cases]
    print(f"quantized ops: {sum(ok)} of {len(ok)} match the spec bit for bit")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
