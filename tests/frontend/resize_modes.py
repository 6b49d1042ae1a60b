#!/usr/bin/python3
"""Resize with its scales an initializer (taps known at compile time: windows over the input,
compiler/frontend/onnx/resize_windows.cc) against the same model
with the scales a model input (the kernel computes the taps: run_time_resize.cc, which ONNX's
node tests check), and against PyTorch's interpolate where it has the mode: linear and cubic,
every coordinate transform, up by 2 and 3, down by 2, 5 / 4, cubic's coefficient
and exclude_outside, on a 1x3x8x12 input (both axes resized).

Usage: resize_modes.py KILNC KILN_RUN WORK_DIR
"""
import itertools
import os
import sys

import numpy as np
import torch
from onnx import TensorProto, helper, numpy_helper

import onnx_case


def model(name, x_shape, out_shape, scales, attrs, scales_input):
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], name=name, **attrs)
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    inits = []
    if scales_input:
        inputs.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]))
    else:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
    g = helper.make_graph([node], name, inputs,
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, out_shape)],
                          initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def torch_reference(x, mode, transform, factor, attrs):
    """PyTorch's interpolate where it computes the same thing, else None."""
    if transform not in ("half_pixel", "align_corners") or "exclude_outside" in attrs:
        return None
    if mode == "cubic" and attrs.get("cubic_coeff_a", -0.75) != -0.75:
        return None
    if mode == "cubic" and factor < 1:  # PyTorch's bicubic clamps taps; ONNX's too, but it
        return None                      # downsamples without antialias either way: skip
    return torch.nn.functional.interpolate(
        torch.from_numpy(x), scale_factor=factor, mode="bilinear" if mode == "linear" else "bicubic",
        align_corners=transform == "align_corners").numpy()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: resize_modes.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    x = np.random.default_rng(11).standard_normal((1, 3, 8, 12)).astype(np.float32)
    cases = [(m, t, f, {}) for m, t, f in itertools.product(
        ("linear", "cubic"), ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"),
        (2.0, 3.0, 0.5, 1.25))]
    cases += [("cubic", "half_pixel", 2.0, {"exclude_outside": 1}),
              ("cubic", "asymmetric", 2.0, {"cubic_coeff_a": -0.5})]
    ok = []
    for mode, transform, factor, extra in cases:
        name = f"{mode}_{transform}_{factor:g}" + "".join(f"_{k}{v}" for k, v in extra.items())
        out_shape = (1, 3, int(8 * factor), int(12 * factor))
        scales = [1.0, 1.0, factor, factor]
        attrs = dict(mode=mode, coordinate_transformation_mode=transform, **extra)
        d = os.path.join(work, name)
        got = onnx_case.run_model(kilnc, kiln_run, os.path.join(d, "constant"),
                                  model(name, x.shape, out_shape, scales, attrs, False),
                                  {"X": x})["Y"]
        run_time = onnx_case.run_model(kilnc, kiln_run, os.path.join(d, "input"),
                                       model(name, x.shape, out_shape, scales, attrs, True),
                                       {"X": x, "scales": np.array(scales, np.float32)})["Y"]
        err = float(np.abs(got - run_time).max()) if got.shape == run_time.shape else np.inf
        good = err <= 1e-5
        line = f"{name:44s} vs run-time taps {err:.2g}"
        want = torch_reference(x, mode, transform, factor, extra)
        if want is not None:
            terr = float(np.abs(got - want).max()) if got.shape == want.shape else np.inf
            good = good and terr <= 1e-4
            line += f", vs PyTorch {terr:.2g}"
        print(f"{line}: {'ok' if good else 'FAILED'}")
        ok.append(good)
    print(f"resize modes: {sum(ok)} of {len(ok)} match")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
