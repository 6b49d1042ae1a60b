#!/usr/bin/python3
"""kilnc run on the SiluAndMul graph file writes an output matching numpy (on this machine), and
the kernel's LLVM IR (--emit llvm-ir) computes on vectors as wide as the target's registers: 8
floats for an AVX2 CPU (znver3), 16 for an AVX-512 CPU (sapphirerapids), whatever the host.

usage: kilnc_run_silu_and_mul.py KILNC SAMPLE.kg WORKDIR
"""
import os
import subprocess
import sys

import numpy as np

kilnc, sample, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)
x = rng.standard_normal((1, 32, 4096)).astype(np.float32) * 3
np.save(os.path.join(work, "x.npy"), x)
out_dir = os.path.join(work, "out")
subprocess.run([kilnc, "run", sample, "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out_dir], check=True)
y = np.load(os.path.join(out_dir, "y.npy"))
left, right = x[..., :2048].astype(np.float64), x[..., 2048:].astype(np.float64)
ref = left / (1 + np.exp(-left)) * right
err = np.abs(y - ref).max() / np.abs(ref).max()
print(f"kilnc run: shape {y.shape} dtype {y.dtype}, max |diff| / max |ref| = {err:.3g}")
assert y.shape == (1, 32, 2048) and y.dtype == np.float32
assert err < 1e-6, err

for cpu, lanes in (("znver3", 8), ("sapphirerapids", 16)):
    ir_path = os.path.join(work, f"k_{cpu}.ll")
    subprocess.run([kilnc, "compile", sample, "--target", "x86_64-linux-gnu", "--cpu", cpu,
                    "--emit", "llvm-ir", "-o", ir_path], check=True)
    ir = open(ir_path).read()
    vec = f"<{lanes} x float>"
    ops = [line for line in ir.splitlines() if vec in line and ("fmul" in line or "load" in line or "store" in line)]
    wider = f"<{lanes * 2} x float>"
    print(f"LLVM IR for {cpu}: {len(ops)} load/store/fmul instructions on {vec}")
    assert len(ops) >= 3, ir[:2000]
    assert not any(wider in line and "load" in line for line in ir.splitlines()), f"{cpu}: loads wider than {vec}"
print("ok")
