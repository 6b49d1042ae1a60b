#!/usr/bin/python3
"""The cost of one package over a range of shapes (issue #14): a symbolic package against static
packages of the same model, each run through the C runtime (kiln-run) at the same shape.

  encoder   the transformer encoder (tests/models/export_models.py) over --dim seq=1..512, run at
            seq 512 (the upper bound: goal within 10% of the static seq-512 package) and at
            seq 16 (goal within 25% of the static seq-16 package: the kernels must not run at
            the bound)
  resnet18  over --dim batch=1..8, run at batch 8 and batch 1 (reported; no goal in the issue)

Runs alternate between the two packages (min of --repeat runs, over several rounds) because
timings on a shared machine drift; ratios are dynamic / static. Also reports each package's
arena (the symbolic one is planned at the maximums). Prints a markdown table.

Usage: symbolic_shapes.py [--build DIR] [--threads N] [--rounds N] [--repeat N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "models"))
sys.path.insert(0, os.path.join(TOP, "tools", "bench"))
import export_models  # noqa: E402
from run_benchmarks import machine  # noqa: E402


def sh(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}")
    return p.stdout


def export(name, work):
    if name == "encoder":
        model, x, input_name = export_models.transformer()
        axes = {"ids": {1: "seq"}, "output": {1: "seq"}}
    else:
        model, x, input_name = export_models.classifier("resnet18")
        axes = {"input": {0: "batch"}, "output": {0: "batch"}}
    path = os.path.join(work, f"{name}.onnx")
    with torch.enable_grad():
        torch.onnx.export(model, (x,), path, opset_version=export_models.OPSET,
                          input_names=[input_name], output_names=["output"], dynamic_axes=axes,
                          do_constant_folding=True)
    return path, input_name


def latency(kiln_run, pkg, arg, threads, repeat):
    out = sh([kiln_run, pkg, "--input", arg, "--repeat", str(repeat), "--threads", str(threads)])
    return float(re.search(r"latency_ms: min=([0-9.]+)", out).group(1))


def arena(kilnc_plan_json):
    line = next(l for l in kilnc_plan_json.splitlines() if l.startswith("{"))
    return json.loads(line)["arena_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    kilnc = os.path.join(a.build, "tools", "kilnc", "kilnc")
    kiln_run = os.path.join(a.build, "tools", "kiln-run", "kiln-run")
    work = tempfile.mkdtemp(prefix="kiln-symbolic-")
    cases = [("encoder", "seq", 1, 512, [512, 16]), ("resnet18", "batch", 1, 8, [8, 1])]
    rows = []
    for name, sym, lo, hi, values in cases:
        onnx_path, input_name = export(name, work)
        dyn = os.path.join(work, f"{name}_dyn.kiln")
        sh([kilnc, "compile", onnx_path, "--dim", f"{sym}={lo}..{hi}", "-o", dyn, "--quiet"])
        dyn_arena = arena(sh([kilnc, "plan", onnx_path, "--dim", f"{sym}={lo}..{hi}", "--json"]))
        for v in values:
            st = os.path.join(work, f"{name}_{v}.kiln")
            sh([kilnc, "compile", onnx_path, "--dim", f"{sym}={v}", "-o", st, "--quiet"])
            st_arena = arena(sh([kilnc, "plan", onnx_path, "--dim", f"{sym}={v}", "--json"]))
            shape = (1, v) if name == "encoder" else (v, 3, 224, 224)
            x = (np.random.default_rng(v).integers(0, 1000, shape).astype(np.int64)
                 if name == "encoder" else np.random.default_rng(v).standard_normal(shape, np.float32))
            xin = os.path.join(work, f"{name}_in_{v}.npy")
            np.save(xin, x)
            arg = f"{input_name}={xin}"
            d = s = float("inf")
            for _ in range(a.rounds):
                d = min(d, latency(kiln_run, dyn, arg, a.threads, a.repeat))
                s = min(s, latency(kiln_run, st, arg, a.threads, a.repeat))
            rows.append((name, f"{sym}={lo}..{hi}", f"{sym}={v}", d, s, dyn_arena, st_arena))
            print(f"{name} {sym}={v}: dynamic {d:.3f} ms, static {s:.3f} ms, ratio {d / s:.2f}",
                  file=sys.stderr)
    print(f"Measured on {machine()}, {a.threads} thread(s), kiln-run min of {a.repeat} runs "
          f"over {a.rounds} alternating rounds, by `tools/bench/symbolic_shapes.py`.\n")
    print("| model | package | run at | dynamic ms | static ms | dynamic / static | "
          "arena dynamic MiB | arena static MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, pkg, at, d, s, da, sa in rows:
        print(f"| {name} | `{pkg}` | {at} | {d:.3f} | {s:.3f} | {d / s:.2f} | "
              f"{da / 2**20:.1f} | {sa / 2**20:.1f} |")


if __name__ == "__main__":
    main()
