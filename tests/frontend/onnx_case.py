"""Shared by the op checks in tests/frontend: one small ONNX model run through kilnc and kiln-run
as a user would, and a model kilnc must refuse."""
import os
import re
import subprocess

import numpy as np
import onnx


def run_model(kilnc, kiln_run, d, model, inputs, flags=()):
    """Saves `model` and `inputs` (name -> array) under d, compiles (with kilnc `flags`), runs;
    every model output by name."""
    return run_package(kiln_run, d, compile_model(kilnc, d, model, flags), model, inputs)


def compile_model(kilnc, d, model, flags=()):
    """Saves `model` under d and compiles it (with kilnc `flags`); the package's path."""
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    pkg = os.path.join(d, "m.kiln")
    subprocess.run([kilnc, "compile", os.path.join(d, "model.onnx"), "-o", pkg, *flags],
                   check=True, capture_output=True)
    return pkg


def run_package(kiln_run, d, pkg, model, inputs, tag="run"):
    """Runs the package on `inputs` (name -> array, saved under d/tag); every output by name."""
    run_dir = os.path.join(d, tag)
    os.makedirs(run_dir, exist_ok=True)
    args = []
    for k, v in inputs.items():
        np.save(os.path.join(run_dir, f"{k}.npy"), v)
        args += ["--input", f"{k}={os.path.join(run_dir, k + '.npy')}"]
    out = os.path.join(run_dir, "out")
    subprocess.run([kiln_run, pkg, *args, "--output-dir", out], check=True, capture_output=True)
    return {o.name: np.load(os.path.join(out, re.sub(r"[^A-Za-z0-9._-]", "_", o.name) + ".npy"))
            for o in model.graph.output}


def refused(kilnc, d, model, node, want, label, flags=()):
    """kilnc refuses `model` with an error naming node `node` and containing `want`, and writes
    no package. Prints `label: ok` or why not; returns whether it held."""
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    pkg = os.path.join(d, "m.kiln")
    r = subprocess.run([kilnc, "compile", os.path.join(d, "model.onnx"), "-o", pkg, *flags],
                       capture_output=True, text=True)
    ok = (r.returncode != 0 and want in r.stderr and f"node '{node}'" in r.stderr and
          not os.path.exists(pkg))
    print(f"{label} refused: {'ok' if ok else 'FAILED'}" + ("" if ok else f" ({r.stderr.strip()})"))
    return ok


def run_refused(kiln_run, d, pkg, inputs, want, label):
    """kiln-run refuses to run `pkg` on `inputs` with an error containing `want`. Prints
    `label: ok` or why not; returns whether it held."""
    run_dir = os.path.join(d, "refused")
    os.makedirs(run_dir, exist_ok=True)
    args = []
    for k, v in inputs.items():
        np.save(os.path.join(run_dir, f"{k}.npy"), v)
        args += ["--input", f"{k}={os.path.join(run_dir, k + '.npy')}"]
    r = subprocess.run([kiln_run, pkg, *args, "--output-dir", os.path.join(run_dir, "out")],
                       capture_output=True, text=True)
    ok = r.returncode != 0 and want in r.stderr
    print(f"{label} refused at run time: {'ok' if ok else 'FAILED'}" +
          ("" if ok else f" ({r.stderr.strip()})"))
    return ok
