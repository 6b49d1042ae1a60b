#!/usr/bin/python3
"""Single-layer sweep behind Winograd's cost rule (compiler/tensor/winograd.cc, docs/performance.md):

    tools/bench/winograd_sweep.py BUILD_DIR [--quick | --small]

For each (map size, input channels C, output channels K) it exports one Conv(3x3, pad 1) + ReLU
with seeded random weights, compiles it twice with kilnc (default, and --no-winograd), runs both
with kiln-run alternately (best of 3 rounds of 20 runs) and prints the latencies and the ratio
winograd / direct with C K / (C + K), the quantity the rule thresholds. A ratio below 1 means the
transform pays. Also prints whether kilnc took the Winograd path (its package is larger).
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

GRID = ([(56, c, k) for c in (16, 32, 64) for k in (16, 32, 64)] +
        [(28, c, k) for c in (32, 64, 128) for k in (32, 64, 128)] +
        [(14, c, k) for c in (64, 128, 256) for k in (64, 128, 256)] +
        [((96, 128), 48, 16), ((96, 128), 16, 16), ((48, 64), 32, 32)] +
        [((7, 7), c, c) for c in (32, 64, 128, 256, 512)])
QUICK = [(56, 64, 64), (28, 16, 16), ((96, 128), 48, 16)]


def best_ms(kiln_run, pkg, npy):
    best = float("inf")
    for _ in range(3):
        out = subprocess.run([kiln_run, pkg, "--input", "x=" + npy, "--repeat", "20"],
                             capture_output=True, text=True, check=True).stdout
        best = min(best, float(re.search(r"min=([0-9.]+)", out).group(1)))
    return best


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    kilnc = os.path.join(build, "tools/kilnc/kilnc")
    kiln_run = os.path.join(build, "tools/kiln-run/kiln-run")
    torch.manual_seed(0)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}")
    print("map        C     K  C*K/(C+K)  direct ms  winograd ms  ratio  taken")
    grid = QUICK if "--quick" in sys.argv else GRID
    if "--small" in sys.argv:  # only the maps F(2, 3) is for
        grid = [g for g in GRID if g[0] == (7, 7)]
    with tempfile.TemporaryDirectory() as tmp:
        for hw, c, k in grid:
            h, w = hw if isinstance(hw, tuple) else (hw, hw)
            model = torch.nn.Sequential(torch.nn.Conv2d(c, k, 3, padding=1), torch.nn.ReLU()).eval()
            x = torch.randn(1, c, h, w)
            onnx_path, npy = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "x.npy")
            torch.onnx.export(model, x, onnx_path, input_names=["x"], opset_version=13)
            np.save(npy, x.numpy())
            wino, direct = os.path.join(tmp, "w.kiln"), os.path.join(tmp, "d.kiln")
            subprocess.run([kilnc, "compile", onnx_path, "-o", wino, "--quiet"], check=True,
                           capture_output=True)
            subprocess.run([kilnc, "compile", onnx_path, "-o", direct, "--quiet", "--no-winograd"],
                           check=True, capture_output=True)
            # F(4, 3) stores 4x the weights, F(2, 3) 1.8x.
            taken = os.path.getsize(wino) > 1.4 * os.path.getsize(direct)
            td, tw = best_ms(kiln_run, direct, npy), best_ms(kiln_run, wino, npy)
            print(f"{h:3d}x{w:<4d} {c:4d} {k:5d} {c * k / (c + k):9.1f} {td:10.3f} {tw:12.3f} "
                  f"{tw / td:6.2f}  {'yes' if taken else 'no'}", flush=True)


if __name__ == "__main__":
    main()
