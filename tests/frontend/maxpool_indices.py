#!/usr/bin/python3
"""MaxPool's Indices output against a numpy reading of the spec: flat indices over (N, C,
spatial...), spatial axes row-major (storage_order 0) or column-major (1), with padding,
strides, dilation, 1-D to 3-D, ties resolved to the first maximum in scan order.

Usage: maxpool_indices.py KILNC KILN_RUN WORK_DIR
"""
import itertools
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case


def reference(x, kernel, strides, pads, dilations, column_major):
    nsp = x.ndim - 2
    sp = x.shape[2:]
    out_sp = [(sp[d] + pads[d] + pads[d + nsp] - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1
              for d in range(nsp)]
    vals = np.zeros(x.shape[:2] + tuple(out_sp), x.dtype)
    idx = np.zeros(vals.shape, np.int64)
    plane = int(np.prod(sp))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*[range(k) for k in out_sp]):
            best, best_i = -np.inf, -1
            for k in itertools.product(*[range(k) for k in kernel]):  # scan order
                pos = [o[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(nsp)]
                if any(p < 0 or p >= sp[d] for d, p in enumerate(pos)):
                    continue
                v = x[(n, c) + tuple(pos)]
                if v > best:
                    order = range(nsp) if column_major else range(nsp - 1, -1, -1)
                    flat, stride = 0, 1
                    for d in order:
                        flat += pos[d] * stride
                        stride *= sp[d]
                    best, best_i = v, (n * x.shape[1] + c) * plane + flat
            vals[(n, c) + o], idx[(n, c) + o] = best, best_i
    return vals, idx


CASES = [  # shape, kernel, strides, pads, dilations, storage_order
    ((2, 3, 7, 6), [3, 2], [2, 1], [1, 0, 1, 1], [1, 2], 0),
    ((1, 2, 6, 5), [2, 3], [1, 2], [0, 1, 1, 1], [1, 1], 1),
    ((2, 2, 11), [3], [2], [1, 1], [2], 0),
    ((1, 2, 4, 5, 3), [2, 2, 2], [1, 2, 1], [0, 1, 0, 1, 0, 1], [1, 1, 1], 1),
]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: maxpool_indices.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(4)
    ok = []
    for i, (shape, kernel, strides, pads, dil, order) in enumerate(CASES):
        # Few distinct values, so windows hold ties.
        x = rng.integers(0, 4, shape).astype(np.float32)
        want_v, want_i = reference(x, kernel, strides, pads, dil, order == 1)
        name = f"maxpool_indices_{i}"
        d = os.path.join(work, name)
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], name=name, kernel_shape=kernel,
                                strides=strides, pads=pads, dilations=dil, storage_order=order)
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, want_v.shape),
                               helper.make_tensor_value_info("i", TensorProto.INT64, want_i.shape)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"x": x})
        got_v = out["y"]
        got_i = out["i"]
        good = np.array_equal(got_v, want_v) and np.array_equal(got_i, want_i)
        print(f"{name} {shape} storage_order {order}: {'ok' if good else 'FAILED'}")
        ok.append(good)
    print(f"maxpool indices: {sum(ok)} of {len(ok)} match")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
