#!/usr/bin/python3
"""RoiAlign (avg) against torchvision.ops.roi_align, aligned (half_pixel) and not
(output_half_pixel), two images, boxes partly outside the image and smaller than a pixel.

Usage: roi_align.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
import torch
import torchvision
from onnx import TensorProto, helper

import onnx_case


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: roi_align.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array([[1.0, 2.0, 7.5, 9.0], [-3.0, -2.0, 4.0, 5.0], [6.0, 8.0, 14.0, 15.0],
                     [3.2, 3.1, 3.6, 3.4], [0.0, 0.0, 19.0, 23.0]], np.float32)
    batch = np.array([0, 1, 0, 1, 1], np.int64)
    ok = []
    for mode_name, aligned in (("half_pixel", True), ("output_half_pixel", False)):
        name = f"roi_align_{mode_name}"
        d = os.path.join(work, name)
        node = helper.make_node("RoiAlign", ["X", "rois", "batch"], ["Y"], name=name,
                                coordinate_transformation_mode=mode_name, output_height=4,
                                output_width=3, sampling_ratio=2, spatial_scale=0.5)
        g = helper.make_graph([node], name, [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, rois.shape),
            helper.make_tensor_value_info("batch", TensorProto.INT64, batch.shape)],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (5, 3, 4, 3))])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
        out = onnx_case.run_model(kilnc, kiln_run, d, model, {"X": x, "rois": rois, "batch": batch})
        got = out["Y"]
        boxes = torch.from_numpy(np.concatenate([batch[:, None].astype(np.float32), rois], 1))
        want = torchvision.ops.roi_align(torch.from_numpy(x), boxes, (4, 3), spatial_scale=0.5,
                                         sampling_ratio=2, aligned=aligned).numpy()
        err = float(np.abs(got - want).max())
        good = got.shape == want.shape and err <= 1e-5
        print(f"{name:30s} max |diff| {err:.2g}: {'ok' if good else 'FAILED'}")
        ok.append(good)
    print(f"roi align: {sum(ok)} of {len(ok)} match torchvision")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
