#!/usr/bin/python3
"""Real models end to end: exports resnet18, mobilenet_v2, squeezenet1_1, efficientnet_b0 (its
squeeze-excitation scales write over the maps they scale, in place), densenet121 (batch norm and
ReLU over concatenations of up to 25 parts, done in the parts), a 2-layer
TransformerEncoder, an LSTM classifier, a GRU tagger and a U-Net with seeded random weights
(export_models.py), compiles each with
`kilnc compile`, runs it with `kiln-run`, and compares with PyTorch's output on the same input:
max |diff| <= 1e-4 * max |reference|, and the same top-1 class for the image classifiers. Compile time
is printed; over 60 s fails. Each model is compiled a second time with glibc's malloc told to place
its blocks otherwise (no thread cache, every block from mmap): the package must be byte for byte the
same, as it must be from two builds of kilnc whose allocations differ.

Usage: check_real_models.py KILNC KILN_RUN WORK_DIR [NAME ...]
"""
import filecmp
import os
import subprocess
import sys
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_models  # noqa: E402

COMPILE_LIMIT_S = 60.0
# Other addresses for every node: a choice that follows pointer order or hash order shows here.
OTHER_HEAP = "glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=4096"
TOLERANCE = 1e-4
IMAGE_CLASSIFIERS = {"resnet18", "mobilenet_v2", "squeezenet1_1", "resnet50", "efficientnet_b0",
                     "densenet121"}
DEFAULT = ["resnet18", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0", "densenet121",
           "transformer", "lstm_classifier", "gru_tagger", "unet"]


def check(name, kilnc, kiln_run, work):
    export_models.export(name, work)
    d = os.path.join(work, name)
    pkg = os.path.join(d, "model.kiln")
    input_name = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False).graph.input[0].name
    t0 = time.monotonic()
    subprocess.run([kilnc, "compile", os.path.join(d, "model.onnx"), "-o", pkg], check=True)
    compile_s = time.monotonic() - t0
    again = os.path.join(d, "model_other_heap.kiln")
    subprocess.run([kilnc, "compile", os.path.join(d, "model.onnx"), "-o", again, "--quiet"],
                   check=True, env={**os.environ, "GLIBC_TUNABLES": OTHER_HEAP})
    reproducible = filecmp.cmp(pkg, again, shallow=False)
    os.remove(again)
    out_dir = os.path.join(d, "out")
    t0 = time.monotonic()
    subprocess.run([kiln_run, pkg, "--input", f"{input_name}={os.path.join(d, 'input.npy')}",
                    "--output-dir", out_dir], check=True, stdout=subprocess.DEVNULL)
    run_s = time.monotonic() - t0
    ref = np.load(os.path.join(d, "reference.npy"))
    got = np.load(os.path.join(out_dir, "output.npy"))
    problems = []
    if got.shape != ref.shape or got.dtype != ref.dtype:
        problems.append(f"output is {got.dtype}{got.shape}, PyTorch gives {ref.dtype}{ref.shape}")
        diff, scale = float("inf"), float(np.abs(ref).max())
    else:
        diff, scale = float(np.abs(got - ref).max()), float(np.abs(ref).max())
        if not diff <= TOLERANCE * scale:
            problems.append(f"max |diff| {diff:.3g} > {TOLERANCE} * max |ref| ({scale:.3g})")
        if name in IMAGE_CLASSIFIERS and int(got.argmax()) != int(ref.argmax()):
            problems.append(f"top-1 {int(got.argmax())}, PyTorch says {int(ref.argmax())}")
    if not reproducible:
        problems.append("compiled again with other heap addresses, the package differs")
    if compile_s > COMPILE_LIMIT_S:
        problems.append(f"compile took {compile_s:.1f} s (limit {COMPILE_LIMIT_S:.0f} s)")
    top1 = f", top-1 {int(got.argmax())}" if name in IMAGE_CLASSIFIERS else ""
    print(f"{name:14s} compile {compile_s:5.1f} s, run {run_s:5.2f} s, max |diff| {diff:.3g} "
          f"(= {diff / scale:.2g} x max |ref|){top1}: {'ok' if not problems else 'FAILED'}")
    for p in problems:
        print(f"  {name}: {p}")
    return not problems


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: check_real_models.py KILNC KILN_RUN WORK_DIR [NAME ...]")
    kilnc, kiln_run, work = sys.argv[1:4]
    names = sys.argv[4:] or DEFAULT
    ok = [check(n, kilnc, kiln_run, work) for n in names]
    print(f"real models: {sum(ok)} of {len(ok)} match PyTorch")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
