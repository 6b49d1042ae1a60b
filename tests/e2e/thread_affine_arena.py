#!/usr/bin/python3
"""A package compiled for 2 threads, whose arena offsets place_arena_for_threads moved (kilnc logs
"arena for 2 threads: N of M buffers moved"), computes at 2 threads what the 1-thread package
computes: no live buffers overlap at the new offsets (compiler/opt/thread_affine_arena.h).

usage: thread_affine_arena.py KILNC KILN_RUN SAMPLE.kg WORKDIR
"""
import os
import re
import subprocess
import sys

import numpy as np

kilnc, kiln_run, sample, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
x = np.random.default_rng(11).standard_normal((2, 3, 32, 32)).astype(np.float32)
np.save(os.path.join(work, "image.npy"), x)
outputs = {}
for threads in (1, 2):
    pkg = os.path.join(work, f"t{threads}.kiln")
    log = subprocess.run([kilnc, "compile", sample, "-o", pkg, "--threads", str(threads)],
                         check=True, capture_output=True, text=True)
    moved = re.search(r"arena for 2 threads: (\d+) of (\d+) buffers moved", log.stdout + log.stderr)
    if threads == 2:
        assert moved and int(moved.group(1)) > 0, "the 2-thread package's arena was not re-placed:\n" + log.stdout + log.stderr
        print(moved.group(0))
    else:
        assert not moved, "a 1-thread package's arena was re-placed"
    out = os.path.join(work, f"out{threads}")
    subprocess.run([kiln_run, pkg, "--input", "image=" + os.path.join(work, "image.npy"), "--threads",
                    str(threads), "--output-dir", out], check=True, capture_output=True)
    outputs[threads] = {f[:-4]: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}
assert outputs[1].keys() == outputs[2].keys() and outputs[1], outputs[1].keys()
for name, want in outputs[1].items():
    got = outputs[2][name]
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    print(f"{name}: shape {got.shape}, max |2 threads - 1 thread| / max = {err:.3g}")
    assert got.shape == want.shape and err < 1e-5, (name, err)
print("ok")
