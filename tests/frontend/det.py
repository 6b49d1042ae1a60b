#!/usr/bin/python3
"""Det against numpy.linalg.det: sizes 1 to 7, a batch of matrices, matrices that need pivoting
(a zero leading entry, rows in the wrong order) and singular ones.

Usage: det.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: det.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(12)
    cases = {f"random_{m}": rng.standard_normal((3, m, m)).astype(np.float32) for m in range(1, 8)}
    p = rng.standard_normal((4, 4, 4)).astype(np.float32)
    p[0, 0, 0] = 0                      # a zero leading entry
    p[1] = np.eye(4)[[2, 0, 3, 1]]      # a permutation: det +-1
    p[2, 3] = p[2, 1] * 2               # singular: two proportional rows
    p[3] = 0                            # all zero
    cases["pivoting_and_singular"] = p
    ok = []
    for name, a in cases.items():
        d = os.path.join(work, name)
        g = helper.make_graph([helper.make_node("Det", ["a"], ["y"], name=name)], name,
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, a.shape[:-2])])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"a": a})
        got = out["y"]
        want = np.linalg.det(a.astype(np.float64))
        good = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        print(f"{name:24s} {'ok' if good else 'FAILED'}" + ("" if good else f"\n  {got}\n  {want}"))
        ok.append(good)
    print(f"det: {sum(ok)} of {len(ok)} match numpy")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
