#!/usr/bin/python3
"""MaxUnpool against PyTorch's max_unpool1d/2d on MaxPool's own indices (overlapping windows,
padding, strides; batch 2, 3 channels). ONNX's indices count over (N, C, spatial...), PyTorch's
per plane, so the plane offsets are added for the ONNX side.

Usage: max_unpool.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper

import onnx_case


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: max_unpool.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(2)
    ok = []
    for name, shape, k, s, p in (("unpool2d_overlap", (2, 3, 9, 9), 3, 2, 1),
                                 ("unpool2d_plain", (2, 3, 8, 6), 2, 2, 0),
                                 ("unpool1d", (2, 3, 11), 3, 2, 1)):
        x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        nd = len(shape) - 2
        pool = torch.nn.functional.max_pool2d if nd == 2 else torch.nn.functional.max_pool1d
        unpool = torch.nn.functional.max_unpool2d if nd == 2 else torch.nn.functional.max_unpool1d
        v, i = pool(x, k, s, p, return_indices=True)
        want = unpool(v, i, k, s, p).numpy()
        plane = int(np.prod(want.shape[2:]))
        offs = (np.arange(shape[0] * shape[1]) * plane).reshape((shape[0], shape[1]) + (1,) * nd)
        onnx_i = (i.numpy() + offs).astype(np.int64)
        d = os.path.join(work, name)
        node = helper.make_node("MaxUnpool", ["v", "i"], ["y"], name=name, kernel_shape=[k] * nd,
                                strides=[s] * nd, pads=[p] * (2 * nd))
        g = helper.make_graph([node], name, [
            helper.make_tensor_value_info("v", TensorProto.FLOAT, v.shape),
            helper.make_tensor_value_info("i", TensorProto.INT64, v.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, want.shape)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"v": v.numpy(), "i": onnx_i})
        got = out["y"]
        good = got.shape == want.shape and np.array_equal(got, want)
        print(f"{name:18s} {shape}: {'ok' if good else 'FAILED'}")
        ok.append(good)
    print(f"max unpool: {sum(ok)} of {len(ok)} match PyTorch")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
