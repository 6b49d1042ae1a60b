#!/usr/bin/python3
"""Unique beyond the node tests: random integers and floats with many repeats, flattened and
along every axis of a 3-D tensor, sorted and in order of first occurrence, against numpy.unique
(return_index, return_inverse, return_counts). The outputs' data-dependent dim is the dim
parameter 'u' with --dim u=0..M: each run reports how many distinct entries it found.

Usage: unique.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case

SHAPE = (3, 5, 4)


def model(axis, sorted_, elem):
    attrs = {"sorted": int(sorted_)}
    if axis is not None:
        attrs["axis"] = axis
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], name="uniq",
                            **attrs)
    if axis is None:
        y_shape, m = ["u"], int(np.prod(SHAPE))
    else:
        y_shape = list(SHAPE)
        y_shape[axis] = "u"
        m = SHAPE[axis]
    g = helper.make_graph(
        [node], "unique", [helper.make_tensor_value_info("x", elem, list(SHAPE))],
        [helper.make_tensor_value_info("y", elem, y_shape),
         helper.make_tensor_value_info("indices", TensorProto.INT64, ["u"]),
         helper.make_tensor_value_info("inverse", TensorProto.INT64, [m]),
         helper.make_tensor_value_info("counts", TensorProto.INT64, ["u"])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), m


def reference(x, axis, sorted_):
    y, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                 axis=axis)
    inv = inv.reshape(-1)
    if not sorted_:  # the order of first occurrence
        order = np.argsort(idx, kind="stable")
        y = np.take(y, order, axis=0 if axis is None else axis)
        where = np.empty_like(order)
        where[order] = np.arange(len(order))
        idx, cnt, inv = idx[order], cnt[order], where[inv]
    return [y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: unique.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(5)
    ok = []
    for elem, np_type in ((TensorProto.INT64, np.int64), (TensorProto.FLOAT, np.float32)):
        for axis in (None, 0, 1, 2, -1):
            for sorted_ in (True, False):
                m, count = model(axis, sorted_, elem)
                name = f"{np_type.__name__}_axis{axis}_sorted{int(sorted_)}"
                d = os.path.join(work, name)
                pkg = onnx_case.compile_model(kilnc, d, m, ["--dim", f"u=0..{count}"])
                for trial in range(2):
                    if axis is None:
                        x = rng.integers(0, 6, SHAPE).astype(np_type)
                    else:  # slices that repeat: a few distinct ones, drawn again and again
                        a = axis % 3
                        pool = rng.integers(0, 3, (2,) + SHAPE[:a] + SHAPE[a + 1:])
                        x = np.moveaxis(pool[rng.integers(0, 2, SHAPE[a])], 0, a).astype(np_type)
                    got = onnx_case.run_package(kiln_run, d, pkg, m, {"x": x}, f"t{trial}")
                    want = reference(x, axis, sorted_)
                    good = all(g.shape == w.shape and np.array_equal(g, w)
                               for g, w in zip([got[k] for k in ("y", "indices", "inverse",
                                                                  "counts")], want))
                    print(f"{name} trial {trial}: {want[1].size} distinct: "
                          f"{'ok' if good else 'FAILED'}")
                    if not good:
                        print(f"  got {[got[k].tolist() for k in ('indices', 'counts')]}\n"
                              f"  want {[want[1].tolist(), want[3].tolist()]}")
                    ok.append(good)
    print(f"unique: {sum(ok)} of {len(ok)} match numpy")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
