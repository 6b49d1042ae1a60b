#!/usr/bin/python3
"""Operands that are model inputs but decide no shape: Trilu's k and CumSum's axis. Each model is
compiled once and run with several values, compared with numpy (a value frozen at compile time
would give one answer for all of them).

Usage: runtime_scalars.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case


def cumsum_ref(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis=axis)
    if exclusive:
        c = c - y
    return np.flip(c, axis) if reverse else c


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: runtime_scalars.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(5)
    ok = []

    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    for upper in (0, 1):
        name = f"trilu_upper{upper}"
        d = os.path.join(work, name)
        g = helper.make_graph(
            [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper, name=name)], name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
             helper.make_tensor_value_info("k", TensorProto.INT64, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        pkg = onnx_case.compile_model(kilnc, d, model)
        for k in (-7, -2, 0, 1, 3, 9):
            got = onnx_case.run_package(kiln_run, d, pkg, model,
                                        {"x": x, "k": np.array(k, np.int64)}, f"k{k}")["y"]
            want = np.triu(x, k) if upper else np.tril(x, k)
            good = np.array_equal(got, want)
            print(f"{name} k={k:3d}: {'ok' if good else 'FAILED'}")
            ok.append(good)

    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for exclusive, reverse in ((0, 0), (1, 1)):
        name = f"cumsum_exclusive{exclusive}_reverse{reverse}"
        d = os.path.join(work, name)
        g = helper.make_graph(
            [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                              reverse=reverse, name=name)], name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
             helper.make_tensor_value_info("axis", TensorProto.INT32, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        pkg = onnx_case.compile_model(kilnc, d, model)
        for axis in (0, 1, 2, -1, -3):
            got = onnx_case.run_package(kiln_run, d, pkg, model,
                                        {"x": x, "axis": np.array(axis, np.int32)},
                                        f"axis{axis}")["y"]
            want = cumsum_ref(x, axis, exclusive, reverse)
            good = np.allclose(got, want, rtol=1e-5, atol=1e-6)
            print(f"{name} axis={axis:2d}: {'ok' if good else 'FAILED'}")
            ok.append(good)

    print(f"runtime scalars: {sum(ok)} of {len(ok)} checks pass")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
