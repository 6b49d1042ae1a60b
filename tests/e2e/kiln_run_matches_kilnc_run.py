#!/usr/bin/python3
"""kiln-run (the C runtime) gives the same outputs as kilnc run (the JIT) on a model with weights,
with 1 and 2 threads; --repeat prints its latency line; --profile its per-kernel table; a wrong
input shape is an error naming the input.

usage: kiln_run_matches_kilnc_run.py KILNC KILN_RUN MODEL.kg WORKDIR
"""
import os
import re
import subprocess
import sys

import numpy as np

kilnc, kiln_run, model, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
np.save(os.path.join(work, "image.npy"), x)
pkg = os.path.join(work, "m.kiln")
subprocess.run([kilnc, "compile", model, "-o", pkg], check=True)
subprocess.run([kilnc, "run", model, "--input", "image=" + os.path.join(work, "image.npy"), "--output-dir",
                os.path.join(work, "jit")], check=True)
for threads in (1, 2):
    out = os.path.join(work, f"rt{threads}")
    r = subprocess.run([kiln_run, pkg, "--input", "image=" + os.path.join(work, "image.npy"), "--output-dir", out,
                        "--threads", str(threads), "--repeat", "5", "--profile"], check=True, capture_output=True, text=True)
    print(r.stdout)
    assert re.search(r"latency_ms: min=[0-9.]+ median=[0-9.]+", r.stdout), r.stdout
    assert "mean_ms" in r.stdout
    for name in ("probs", "features"):
        a = np.load(os.path.join(out, name + ".npy"))
        b = np.load(os.path.join(work, "jit", name + ".npy"))
        assert a.shape == b.shape and np.array_equal(a, b), (name, threads, np.abs(a - b).max())
bad = os.path.join(work, "bad.npy")
np.save(bad, np.zeros((2, 3, 16, 16), np.float32))
r = subprocess.run([kiln_run, pkg, "--input", "image=" + bad], capture_output=True, text=True)
assert r.returncode != 0 and "image" in r.stderr, r.stderr
print("ok")
