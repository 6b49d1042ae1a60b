#!/usr/bin/python3
"""DFT and STFT beyond the node tests, against numpy.fft: a onesided real DFT on a middle axis, a
DFT zero-padded by dft_length, a complex inverse DFT, and an STFT with a Hann window (built by
HannWindow) over a batch, with frame_step, window and lengths as the initializers real audio
front ends hold them in.

Usage: signal_ops.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_case


def run(kilnc, kiln_run, work, name, nodes, x, out_shape, inits=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return onnx_case.run_model(kilnc, kiln_run, os.path.join(work, name), m, {"x": x})["y"]


def as_pairs(c):
    return np.stack([c.real, c.imag], -1).astype(np.float32)


def check(name, got, want):
    err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
    ok = err <= 1e-4 * max(1.0, float(np.abs(want).max()))
    print(f"{name:30s} max |diff| {err:.2g}: {'ok' if ok else 'FAILED'}")
    return ok


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: signal_ops.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(9)
    ok = []

    x = rng.standard_normal((2, 12, 3, 1)).astype(np.float32)
    got = run(kilnc, kiln_run, work, "dft_onesided_axis1",
              [helper.make_node("DFT", ["x"], ["y"], axis=1, onesided=1)], x, (2, 7, 3, 2))
    ok.append(check("dft onesided, axis 1", got, as_pairs(np.fft.rfft(x[..., 0], axis=1))))

    x = rng.standard_normal((3, 10, 1)).astype(np.float32)
    got = run(kilnc, kiln_run, work, "dft_length_padded",
              [helper.make_node("DFT", ["x", "len"], ["y"], axis=1)], x, (3, 16, 2),
              [("len", np.array(16, np.int64))])
    ok.append(check("dft zero-padded to 16", got, as_pairs(np.fft.fft(x[..., 0], n=16, axis=1))))

    z = rng.standard_normal((2, 9, 2)).astype(np.float32)
    got = run(kilnc, kiln_run, work, "dft_inverse_complex",
              [helper.make_node("DFT", ["x"], ["y"], axis=1, inverse=1)], z, (2, 9, 2))
    ok.append(check("inverse dft of a complex signal", got,
                    as_pairs(np.fft.ifft(z[..., 0] + 1j * z[..., 1], axis=1))))

    s = rng.standard_normal((2, 200, 1)).astype(np.float32)
    frame, step = 32, 12
    nodes = [helper.make_node("HannWindow", ["wlen"], ["w"]),
             helper.make_node("STFT", ["x", "step", "w", "flen"], ["y"])]
    frames = (200 - frame) // step + 1
    got = run(kilnc, kiln_run, work, "stft_hann", nodes, s, (2, frames, frame // 2 + 1, 2),
              [("wlen", np.array(frame, np.int64)), ("step", np.array(step, np.int64)),
               ("flen", np.array(frame, np.int64))])
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)
    want = np.stack([np.fft.rfft(s[:, i * step:i * step + frame, 0] * hann, axis=-1)
                     for i in range(frames)], axis=1)
    ok.append(check("stft, hann window", got, as_pairs(want)))
    print(f"signal ops: {sum(ok)} of {len(ok)} match numpy")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
