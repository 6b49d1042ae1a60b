#!/usr/bin/python3
"""Every stage name that `kilnc compile --time-passes` prints is accepted by --dump-ir and dumps
under its own header; an unknown stage, and one that does not run for the command, are errors
that name the stages.

usage: stage_names_agree.py KILNC MODEL WORKDIR
"""
import os
import re
import subprocess
import sys

kilnc, model, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
out = os.path.join(work, "m.kiln")

timed = subprocess.run([kilnc, "compile", model, "-o", out, "--time-passes"], capture_output=True,
                       text=True, check=True).stderr
table = timed[timed.index("--- time-passes ---"):]
names = [m.group(1) for m in re.finditer(r"^  (\S+)\s+[\d.]+ ms", table, re.M) if m.group(1) != "total"]
print("--time-passes:", " ".join(names))
assert len(names) >= 14, names

for name in names:
    r = subprocess.run([kilnc, "compile", model, "-o", out, "--dump-ir=" + name], capture_output=True,
                       text=True)
    assert r.returncode == 0, f"--dump-ir={name}: exit {r.returncode}\n{r.stderr[-2000:]}"
    header = f"--- {name} ---\n"
    assert header in r.stderr, f"--dump-ir={name}: no '{header.strip()}' header"
    body = r.stderr[r.stderr.index(header) + len(header):]
    assert body.strip(), f"--dump-ir={name}: an empty dump"
    print(f"--dump-ir={name}: {len(body.splitlines())} lines")

r = subprocess.run([kilnc, "compile", model, "-o", out, "--dump-ir=frobnicate"], capture_output=True, text=True)
assert r.returncode == 1 and "unknown stage 'frobnicate'" in r.stderr and "late_lower" in r.stderr, r.stderr
r = subprocess.run([kilnc, "plan", model, "--dump-ir=link"], capture_output=True, text=True)
assert r.returncode == 1 and "stage 'link' does not run" in r.stderr, r.stderr
print(f"stage names agree: {len(names)} stages")
