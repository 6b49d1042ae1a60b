#!/usr/bin/python3
"""The ai.onnx.preview.training optimizer steps beyond the node tests (which run only the first
step, T = 0): Adagrad, Adam and Momentum (standard and Nesterov) over two tensors at once, at
steps T = 0, 1 and 7 (Adam's bias correction, Momentum's first-step coefficient), with random
weights, gradients and accumulators, against the update equations of ONNX's own test cases
(onnx.backend.test.case.node: apply_adagrad, apply_adam, apply_momentum, apply_nesterov).

Usage: training_ops.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper
from onnx.backend.test.case.node.adagrad import apply_adagrad
from onnx.backend.test.case.node.adam import apply_adam
from onnx.backend.test.case.node.momentum import apply_momentum, apply_nesterov

import onnx_case

DOMAIN = "ai.onnx.preview.training"
SHAPES = [(3,), (2, 4)]


def model(op, groups, outputs, attrs):
    names = ["R", "T"] + [f"{g}{i}" for g in groups for i in range(len(SHAPES))]
    outs = [f"{o}{i}_new" for o in outputs for i in range(len(SHAPES))]
    node = helper.make_node(op, names, outs, name="step", domain=DOMAIN, **attrs)
    vi = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
          helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    vi += [helper.make_tensor_value_info(f"{g}{i}", TensorProto.FLOAT, list(s))
           for g in groups for i, s in enumerate(SHAPES)]
    vo = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(SHAPES[int(o[1])]))
          for o in outs]
    g = helper.make_graph([node], op, vi, vo)
    return helper.make_model(g, opset_imports=[helper.make_opsetid(DOMAIN, 1)])


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: training_ops.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(8)
    ok = []
    cases = [
        ("Adagrad", "XGH", "XH", {"norm_coefficient": 0.01, "epsilon": 1e-5, "decay_factor": 0.1},
         lambda r, t, x, g, h, a: apply_adagrad(r, t, x, g, h, a["norm_coefficient"], a["epsilon"],
                                                 a["decay_factor"])),
        ("Adam", "XGVH", "XVH", {"norm_coefficient": 0.01, "norm_coefficient_post": 0.02,
                                 "alpha": 0.9, "beta": 0.8, "epsilon": 1e-3},
         lambda r, t, x, g, v, h, a: apply_adam(r, t, x, g, v, h, a["norm_coefficient"],
                                                a["norm_coefficient_post"], a["alpha"], a["beta"],
                                                a["epsilon"])),
        ("Momentum", "XGV", "XV", {"norm_coefficient": 0.01, "alpha": 0.9, "beta": 0.3,
                                   "mode": "standard"},
         lambda r, t, x, g, v, a: apply_momentum(r, t, x, g, v, a["norm_coefficient"],
                                                 a["alpha"], a["beta"])),
        ("Momentum", "XGV", "XV", {"norm_coefficient": 0.01, "alpha": 0.9, "beta": 0.3,
                                   "mode": "nesterov"},
         lambda r, t, x, g, v, a: apply_nesterov(r, t, x, g, v, a["norm_coefficient"],
                                                 a["alpha"], a["beta"])),
    ]
    for op, groups, outputs, attrs, ref in cases:
        m = model(op, groups, outputs, attrs)
        label = op + ("" if op != "Momentum" else f" ({attrs['mode']})")
        d = os.path.join(work, label.replace(" ", "_").replace("(", "").replace(")", ""))
        pkg = onnx_case.compile_model(kilnc, d, m)
        for t in (0, 1, 7):
            feed = {"R": np.array(0.05, np.float32), "T": np.array(t, np.int64)}
            for grp in groups:
                for i, s in enumerate(SHAPES):
                    v = rng.standard_normal(s).astype(np.float32)
                    feed[f"{grp}{i}"] = np.abs(v) if grp == "H" else v
            got = onnx_case.run_package(kiln_run, d, pkg, m, feed, f"t{t}")
            good = True
            for i in range(len(SHAPES)):
                args = [feed["R"], feed["T"]] + [feed[f"{grp}{i}"] for grp in groups]
                want = ref(*args, attrs)
                for o, w in zip(outputs, want):
                    good &= np.allclose(got[f"{o}{i}_new"], w, rtol=1e-5, atol=1e-6)
            print(f"{label:20s} T={t}: {'ok' if good else 'FAILED'}")
            ok.append(good)
    print(f"training ops: {sum(ok)} of {len(ok)} match ONNX's equations")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
