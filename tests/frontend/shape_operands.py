#!/usr/bin/python3
"""Shape operands fed at run time (docs/symbolic-shapes.md, "Shape operands at run time"): a
model input that gives a Reshape's shape, Unsqueeze's axes, Expand's shape, ConstantOfShape's
shape, TopK's k, ReduceSum's axes, Pad's pads (every mode; negative pads crop), Range's limit
and delta, OneHot's float depth, Resize's scales, or the condition that sizes Compress's and
NonZero's outputs. Each model is compiled once, without --freeze, for the
output shape it declares; values that give that shape (every spelling of it: 0 and -1 in a
Reshape, negative axes, other pads of the same total) match numpy, and values that give another
shape fail the run with KILN_INVALID_ARGUMENT naming the node and the input, not a wrong
answer.

Usage: shape_operands.py KILNC KILN_RUN WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case


def model_of(op, inputs, out_shape, attrs=None, out_type=TensorProto.FLOAT, opset=13,
             outputs=("y",)):
    """One `op` node named after it; inputs are (name, elem_type, shape); every output declared
    with out_shape."""
    node = helper.make_node(op, [i[0] for i in inputs], list(outputs), name=f"the_{op.lower()}",
                            **(attrs or {}))
    g = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(o, out_type if o == "y" else TensorProto.INT64, out_shape)
         for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run_fails(kiln_run, d, pkg, inputs, want, tag):
    """kiln-run refuses `inputs` with an error containing every string in `want`."""
    run_dir = os.path.join(d, tag)
    os.makedirs(run_dir, exist_ok=True)
    args = []
    for k, v in inputs.items():
        np.save(os.path.join(run_dir, f"{k}.npy"), v)
        args += ["--input", f"{k}={os.path.join(run_dir, k + '.npy')}"]
    r = subprocess.run([kiln_run, pkg, *args, "--output-dir", os.path.join(run_dir, "out")],
                       capture_output=True, text=True)
    return r.returncode != 0 and all(w in r.stderr for w in want), r.stderr.strip()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: shape_operands.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(14)
    ok = []

    def check(label, good, detail=""):
        print(f"{label}: {'ok' if good else 'FAILED'}" + ("" if good else f" ({detail})"))
        ok.append(good)

    def case(name, model, fixed, operand, good_values, ref, bad_values, want_words, node=None):
        d = os.path.join(work, name)
        pkg = onnx_case.compile_model(kilnc, d, model)
        for i, v in enumerate(good_values):
            got = onnx_case.run_package(kiln_run, d, pkg, model, {**fixed, operand: v},
                                        f"good{i}")["y"]
            want = ref(v)
            check(f"{name} {operand}={v.tolist()}", got.shape == want.shape and
                  np.allclose(got, want, rtol=1e-5, atol=1e-6), f"got {got.shape}")
        for i, v in enumerate(bad_values):
            good, err = run_fails(kiln_run, d, pkg, {**fixed, operand: v},
                                  [f"node '{node or 'the_' + model.graph.node[0].op_type.lower()}'",
                                   f"input '{operand}'", *want_words], f"bad{i}")
            check(f"{name} {operand}={v.tolist()} refused", good, err)

    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    case("reshape", model_of("Reshape", [("x", TensorProto.FLOAT, x.shape),
                                         ("shape", TensorProto.INT64, [3])], [2, 4, 3]),
         {"x": x}, "shape",
         [np.array(s, np.int64) for s in ([2, 4, 3], [0, 4, -1], [-1, 4, 3], [2, -1, 3])],
         lambda s: np.reshape(x, [x.shape[i] if v == 0 else v for i, v in enumerate(s)]),
         [np.array(s, np.int64) for s in ([4, 2, 3], [-1, -1, 3], [2, 4, 4])],
         ["must give the shape (2,4,3)"])

    case("unsqueeze", model_of("Unsqueeze", [("x", TensorProto.FLOAT, x.shape),
                                             ("axes", TensorProto.INT64, [2])], [1, 2, 3, 1, 4]),
         {"x": x}, "axes", [np.array(a, np.int64) for a in ([0, 3], [3, 0], [-5, -2])],
         lambda a: np.expand_dims(x, tuple(int(v) for v in a)),
         [np.array(a, np.int64) for a in ([0, 1], [3, 3], [0, 9])], ["must give the shape"])

    case("expand", model_of("Expand", [("x", TensorProto.FLOAT, [3, 1]),
                                       ("shape", TensorProto.INT64, [3])], [2, 3, 5]),
         {"x": x[0, :, :1]}, "shape", [np.array(s, np.int64) for s in ([2, 3, 5], [2, 1, 5])],
         lambda s: x[0, :, :1] * np.ones(s, np.float32),
         [np.array([2, 3, 6], np.int64)], ["must broadcast the input to (2,3,5)"])

    case("constant_of_shape",
         model_of("ConstantOfShape", [("shape", TensorProto.INT64, [2])], [3, 5],
                  {"value": helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])}),
         {}, "shape", [np.array([3, 5], np.int64)], lambda s: np.full(s, 2.5, np.float32),
         [np.array([5, 3], np.int64)], ["must give [3, 5]"])

    case("top_k", model_of("TopK", [("x", TensorProto.FLOAT, [3, 4]),
                                    ("k", TensorProto.INT64, [1])], [3, 2], {"axis": 1},
                           outputs=("y", "i")),
         {"x": x.reshape(6, 4)[:3]}, "k", [np.array([2], np.int64)],
         lambda k: -np.sort(-x.reshape(6, 4)[:3], axis=1)[:, :2],
         [np.array([3], np.int64), np.array([1], np.int64)], ["must give [2]"])

    case("reduce_sum", model_of("ReduceSum", [("x", TensorProto.FLOAT, x.shape),
                                              ("axes", TensorProto.INT64, [2])], [1, 3, 1]),
         {"x": x}, "axes", [np.array(a, np.int64) for a in ([0, 2], [2, -3])],
         lambda a: np.sum(x, axis=tuple(int(v) for v in a), keepdims=True),
         [np.array(a, np.int64) for a in ([0, 1], [2, 2])], ["must give the axes"])

    def pad_ref(x, p, mode):
        r = x.ndim
        y = np.pad(x, [(max(0, p[i]), max(0, p[i + r])) for i in range(r)], mode=mode)
        return y[tuple(slice(-min(0, p[i]), y.shape[i] + min(0, p[i + r])) for i in range(r))]

    xp = rng.standard_normal((2, 3)).astype(np.float32)
    for mode in ("constant", "edge", "reflect"):
        good = [[1, 0, 2, 2], [0, 1, 3, 1]] + ([[3, -1, 0, 3]] if mode == "constant" else [])
        case(f"pad_{mode}", model_of("Pad", [("x", TensorProto.FLOAT, xp.shape),
                                             ("pads", TensorProto.INT64, [4])], [5, 5],
                                     {"mode": mode}),
             {"x": xp}, "pads", [np.array(p, np.int64) for p in good],
             lambda p, mode=mode: pad_ref(xp, [int(v) for v in p], mode),
             [np.array([1, 0, 2, 3], np.int64)], ["must pad axis 1 to 5"])

    case("range", model_of("Range", [("start", TensorProto.INT64, []),
                                     ("limit", TensorProto.INT64, []),
                                     ("delta", TensorProto.INT64, [])], [2],
                           out_type=TensorProto.INT64, opset=11),
         {"start": np.array(10, np.int64), "delta": np.array(-3, np.int64)}, "limit",
         [np.array(v, np.int64) for v in (6, 5, 4)], lambda l: np.arange(10, int(l), -3),
         [np.array(v, np.int64) for v in (3, 11)], ["must give, with the other operands"])
    case("range_delta", model_of("Range", [("start", TensorProto.INT64, []),
                                           ("limit", TensorProto.INT64, []),
                                           ("delta", TensorProto.INT64, [])], [2],
                                 out_type=TensorProto.INT64, opset=11),
         {"start": np.array(10, np.int64), "limit": np.array(6, np.int64)}, "delta",
         [np.array(v, np.int64) for v in (-3, -2)], lambda dl: np.arange(10, 6, int(dl)),
         [np.array(0, np.int64)], ["must not be 0"])

    idx = np.array([0, 7, -1], np.int64)
    vals = np.array([-2.0, 3.0], np.float32)
    case("one_hot", model_of("OneHot", [("indices", TensorProto.INT64, [3]),
                                        ("depth", TensorProto.FLOAT, []),
                                        ("values", TensorProto.FLOAT, [2])], [3, 10], opset=11),
         {"indices": idx, "values": vals}, "depth",
         [np.array(v, np.float32) for v in (10.0, 10.7, np.nextafter(np.float32(11), np.float32(0)))],
         lambda dp: np.where(np.eye(10, dtype=bool)[idx], vals[1], vals[0]),
         [np.array(v, np.float32) for v in (9.0, 11.0, -10.0, np.inf, np.nan)],
         ["must give [10]"])

    # MelWeightMatrix: num_mel_bins and dft_length give the output's shape [dft_length / 2 + 1,
    # num_mel_bins]; dft_length 16 and 17 both give the declared 9 rows and place the filters'
    # edges differently, 15 and 18 give other shapes. The reference follows ONNX's test.
    def mel_ref(mels, dft, rate, low, high):
        to_mel = lambda f: 2595 * np.log10(1 + f / 700)
        step = (to_mel(high) - to_mel(low)) / (mels + 2)
        hz = 700 * (np.power(10, (np.arange(mels + 2) * step + to_mel(low)) / 2595) - 1)
        edges = (((dft + 1) * hz) // rate).astype(int)
        out = np.zeros((dft // 2 + 1, mels))
        for i in range(mels):
            lo, c, hi = edges[i], edges[i + 1], edges[i + 2]
            if c == lo:
                out[c, i] = 1
            else:
                for j in range(lo, c + 1):
                    out[j, i] = (j - lo) / (c - lo)
            for j in range(c, hi):
                out[j, i] = (hi - j) / (hi - c)
        return out.astype(np.float32)

    mel_inputs = [("num_mel_bins", TensorProto.INT32, []), ("dft_length", TensorProto.INT32, []),
                  ("sample_rate", TensorProto.INT32, []),
                  ("lower_edge_hertz", TensorProto.FLOAT, []),
                  ("upper_edge_hertz", TensorProto.FLOAT, [])]
    mel_fixed = {"num_mel_bins": np.array(8, np.int32), "sample_rate": np.array(8192, np.int32),
                 "lower_edge_hertz": np.array(100, np.float32),
                 "upper_edge_hertz": np.array(4000, np.float32)}
    case("mel_weight_matrix", model_of("MelWeightMatrix", mel_inputs, [9, 8], opset=17),
         mel_fixed, "dft_length", [np.array(v, np.int32) for v in (16, 17)],
         lambda dft: mel_ref(8, int(dft), 8192, np.float32(100), np.float32(4000)),
         [np.array(v, np.int32) for v in (15, 18)], ["must be 16 or 17"])

    # Resize with run-time scales: [1, 1, 4, 4] to the declared [1, 1, 3, 3]. Any scales with
    # floor(4 * s) == 3 (and floor(s) == 1 on the first axes) give that shape, each with its own
    # coordinates (scale 1.5 on a kept axis shifts it), matched with ONNX's reference resize.
    from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs, cubic_coeffs
    img = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    for mode, coeffs, transform in (("linear", linear_coeffs, "half_pixel"),
                                    ("cubic", cubic_coeffs, "align_corners")):
        case(f"resize_{mode}", model_of("Resize", [("x", TensorProto.FLOAT, img.shape),
                                                   ("roi", TensorProto.FLOAT, [0]),
                                                   ("scales", TensorProto.FLOAT, [4])],
                                        [1, 1, 3, 3], {"mode": mode,
                                                       "coordinate_transformation_mode": transform}),
             {"x": img, "roi": np.zeros(0, np.float32)}, "scales",
             [np.array(v, np.float32) for v in ([1, 1, 0.75, 0.75], [1, 1.5, 0.8, 0.99])],
             lambda sc: interpolate_nd(img, coeffs, scale_factors=sc.tolist(),
                                       coordinate_transformation_mode=transform).astype(np.float32),
             [np.array(v, np.float32) for v in ([1, 1, 0.5, 0.75], [1, 1, 1, 0.75],
                                                [2, 1, 0.75, 0.75], [1, 1, np.nan, 0.75],
                                                [1, 1, -0.75, 0.75])],
             ["must give the output shape (1,1,3,3)", "scale"])

    # A float Range to a float cast of an integer input, then elementwise ops (the expanded
    # window functions' form): shape inference leaves the Range's length and every value after
    # it unknown; the declared output [6] decides them (complete_dims_from_outputs), and the
    # Range checks the input gives that length.
    nodes = [helper.make_node("Cast", ["size"], ["size_fp"], to=TensorProto.FLOAT),
             helper.make_node("Constant", [], ["zero"], value_float=0.0),
             helper.make_node("Constant", [], ["one"], value_float=1.0),
             helper.make_node("Constant", [], ["step"], value_float=0.5),
             helper.make_node("Range", ["zero", "size_fp", "one"], ["the_range_out"],
                              name="the_range"),
             helper.make_node("Mul", ["the_range_out", "step"], ["scaled"]),
             helper.make_node("Cos", ["scaled"], ["y"])]
    g = helper.make_graph(nodes, "window",
                          [helper.make_tensor_value_info("size", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])])
    case("range_to_a_cast_size", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
         {}, "size", [np.array(6, np.int64)],
         lambda v: np.cos(np.arange(6, dtype=np.float32) * 0.5),
         [np.array(v, np.int64) for v in (5, 7, 1 << 30)], ["must"], node="the_range")

    # Data-dependent sizes: Compress and NonZero compiled for the count of trues the declared
    # output gives; any condition with that many matches numpy, any other count is refused.
    xc = rng.standard_normal((3, 2)).astype(np.float32)
    conds = [np.array(c, bool) for c in ([1, 0, 1], [0, 1, 1], [1, 1, 0])]
    case("compress", model_of("Compress", [("x", TensorProto.FLOAT, [3, 2]),
                                           ("condition", TensorProto.BOOL, [3])], [2, 2],
                              {"axis": 0}, opset=11),
         {"x": xc}, "condition", conds, lambda c: np.compress(c, xc, axis=0),
         [np.array(c, bool) for c in ([1, 1, 1], [0, 0, 0], [0, 0, 1])],
         ["must hold 2 true (nonzero) elements"])
    case("compress_flat", model_of("Compress", [("x", TensorProto.FLOAT, [3, 2]),
                                                ("condition", TensorProto.BOOL, [5])], [3],
                                   opset=11),
         {"x": xc}, "condition",
         [np.array([1, 0, 1, 1, 0], bool), np.array([0] * 2 + [1] * 3, bool)],
         lambda c: np.compress(c, xc), [np.array([1, 0, 0, 0, 0], bool)],
         ["must hold 3 true (nonzero) elements"])
    case("non_zero", model_of("NonZero", [("condition", TensorProto.BOOL, [2, 3])], [2, 4],
                              out_type=TensorProto.INT64),
         {}, "condition",
         [np.array(c, bool) for c in ([[1, 0, 1], [1, 1, 0]], [[1, 1, 1], [0, 0, 1]],
                                      [[0, 1, 1], [0, 1, 1]])],
         lambda c: np.array(np.nonzero(c), np.int64),
         [np.array(c, bool) for c in ([[1, 1, 1], [1, 1, 1]], [[0, 0, 0], [0, 0, 1]])],
         ["must hold 4 true (nonzero) elements"])

    # [3, 2, 2] to [3, 2] without keepdims: axis 1 or axis 2, two different sums; both are
    # compiled and the kernel selects the one the run-time axes name.
    case("reduce_sum_either", model_of("ReduceSum", [("x", TensorProto.FLOAT, [3, 2, 2]),
                                                     ("axes", TensorProto.INT64, [1])], [3, 2],
                                       {"keepdims": 0}),
         {"x": x.reshape(6, 4)[:3].reshape(3, 2, 2)}, "axes",
         [np.array([a], np.int64) for a in (1, 2, -1, -2)],
         lambda a: np.sum(x.reshape(6, 4)[:3].reshape(3, 2, 2), axis=int(a[0])),
         [np.array([0], np.int64), np.array([3], np.int64)], ["must give the axes"])

    # Slice with every operand read at run time: x [6, 5, 4] to the declared [3, 5, 2]. Each
    # spelling of those sizes (negative starts, ends past the axis, negative steps, the axes in
    # another order or counted from the end) gives its own window.
    xs = rng.standard_normal((6, 5, 4)).astype(np.float32)
    slice_inputs = [("x", TensorProto.FLOAT, xs.shape), ("starts", TensorProto.INT64, [2]),
                    ("ends", TensorProto.INT64, [2]), ("axes", TensorProto.INT64, [2]),
                    ("steps", TensorProto.INT64, [2])]

    def slice_ref(starts, ends, axes, steps):
        sl = [slice(None)] * 3
        for s0, e0, a, st in zip(starts, ends, axes, steps):
            sl[int(a)] = slice(int(s0), None if e0 < -6 else int(e0), int(st))
        return xs[tuple(sl)]

    d = os.path.join(work, "slice")
    m = model_of("Slice", slice_inputs, [3, 5, 2])
    pkg = onnx_case.compile_model(kilnc, d, m)
    big = 2**62
    good = [([0, 1], [3, 3], [0, 2], [1, 1]), ([-6, 0], [-3, big], [0, -1], [1, 2]),
            ([5, 3], [-big, 1], [0, 2], [-2, -1]), ([1, 2], [3, 5], [2, 0], [1, 1])]
    for i, (st, en, ax, sp) in enumerate(good):
        feed = {"x": xs, "starts": np.array(st, np.int64), "ends": np.array(en, np.int64),
                "axes": np.array(ax, np.int64), "steps": np.array(sp, np.int64)}
        got = onnx_case.run_package(kiln_run, d, pkg, m, feed, f"good{i}")["y"]
        want = slice_ref(st, en, ax, sp)
        check(f"slice starts={st} ends={en} axes={ax} steps={sp}",
              got.shape == want.shape and np.array_equal(got, want), f"got {got.shape}")
    bad = [([0, 1], [4, 3], [0, 2], [1, 1], "must give the shape (3,5,2)"),
           ([0, 1], [3, 3], [0, 0], [1, 1], "input 'axes' must name each axis once"),
           ([0, 1], [3, 3], [0, 2], [1, 0], "must give the shape"),
           ([0, 1], [3, 3], [0, 3], [1, 1], "input 'axes' must name axes")]
    for i, (st, en, ax, sp, why) in enumerate(bad):
        feed = {"x": xs, "starts": np.array(st, np.int64), "ends": np.array(en, np.int64),
                "axes": np.array(ax, np.int64), "steps": np.array(sp, np.int64)}
        good_run, err = run_fails(kiln_run, d, pkg, feed,
                                  ["node 'the_slice'", why], f"bad{i}")
        check(f"slice starts={st} ends={en} axes={ax} steps={sp} refused", good_run, err)

    # A float Range over floats read at run time: its length is computed from the values (a size
    # computed from data, ARCHITECTURE §8), the output planned at the declared 4 and reported at
    # its run-time length; a length past 4 fails the run naming the size.
    m = model_of("Range", [("start", TensorProto.FLOAT, []), ("limit", TensorProto.FLOAT, []),
                           ("delta", TensorProto.FLOAT, [])], [4], opset=11)
    d = os.path.join(work, "float_range")
    pkg = onnx_case.compile_model(kilnc, d, m)
    for i, (st, lim, dl) in enumerate([(1.0, 5.0, 2.0), (0.5, 0.5, 1.0), (2.0, -1.5, -1.25),
                                       (0.0, 1.0, 0.3)]):
        feed = {"start": np.float32(st), "limit": np.float32(lim), "delta": np.float32(dl)}
        got = onnx_case.run_package(kiln_run, d, pkg, m, feed, f"good{i}")["y"]
        want = np.arange(np.float32(st), np.float32(lim), np.float32(dl), dtype=np.float32)
        check(f"float range {st}, {lim}, {dl}: length {len(want)}",
              got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6),
              f"got {got}, want {want}")
    good_run, err = run_fails(kiln_run, d, pkg, {"start": np.float32(0), "limit": np.float32(6),
                                                 "delta": np.float32(1)},
                              ["the size 'the_range.length' is 6, outside the [0, 4]"], "bad")
    check("float range of length 6 refused", good_run, err)

    # Refused at compile time, nothing written: no static output shape to compile for, and
    # run-time axes that could be too many different reductions.
    m = model_of("Reshape", [("x", TensorProto.FLOAT, x.shape),
                             ("shape", TensorProto.INT64, [2])], ["rows", "cols"])
    check("reshape without a static output", onnx_case.refused(
        kilnc, os.path.join(work, "undeclared"), m, "the_reshape",
        "so the model must declare the output's shape", "undeclared"))
    # [2, 2, 2, 2, 2] to [2, 2]: any 3 of the 5 axes, 10 different sums, more than are compiled.
    m = model_of("ReduceSum", [("x", TensorProto.FLOAT, [2, 2, 2, 2, 2]),
                               ("axes", TensorProto.INT64, [3])], [2, 2], {"keepdims": 0})
    check("too many candidate reduce axes", onnx_case.refused(
        kilnc, os.path.join(work, "ambiguous"), m, "the_reducesum",
        "kiln computes at most 4", "ambiguous"))

    print(f"shape operands: {sum(ok)} of {len(ok)} checks pass")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
