#!/usr/bin/python3
"""GridSample against PyTorch's grid_sample (which the ONNX op follows) for every mode, padding
mode and align_corners, on a grid reaching well outside [-1, 1] (so reflection folds more than
once and zeros/border padding matter), two batches and three channels.

Usage: grid_sample.py KILNC KILN_RUN WORK_DIR
"""
import itertools
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper

import onnx_case


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: grid_sample.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = rng.uniform(-2.6, 2.6, (2, 4, 6, 2)).astype(np.float32)
    ok = []
    for mode, padding, align in itertools.product(("bilinear", "nearest", "bicubic"),
                                                  ("zeros", "border", "reflection"), (0, 1)):
        name = f"{mode}_{padding}_{align}"
        d = os.path.join(work, name)
        node = helper.make_node("GridSample", ["X", "grid"], ["Y"], name=name, mode=mode,
                                padding_mode=padding, align_corners=align)
        g = helper.make_graph([node], name, [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid.shape)],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (2, 3, 4, 6))])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"X": x, "grid": grid})
        got = out["Y"]
        want = torch.nn.functional.grid_sample(
            torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding,
            align_corners=bool(align)).numpy()
        # Nearest can pick the other neighbour where a coordinate rounds at exactly .5 in one
        # float order and not the other; the grid is random, so that does not happen here.
        err = float(np.abs(got - want).max())
        good = got.shape == want.shape and err <= 1e-4
        print(f"{name:26s} max |diff| {err:.2g}: {'ok' if good else 'FAILED'}")
        ok.append(good)
    print(f"grid sample: {sum(ok)} of {len(ok)} match PyTorch")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
