#!/usr/bin/python3
"""One package over a range of shapes (issue #14), checked against PyTorch through the C runtime.

resnet18 (seeded random weights, the real-model set's) is exported with a dynamic batch axis,
compiled ONCE with `--dim batch=1..8`, and run by kiln-run at batch 1, 3 and 8: each output must
match PyTorch within 1e-4 relative to its largest magnitude (and have that batch). Then the
refusals: a batch outside the bounds, a --dim range with min > max, a symbol no input defines.

Usage: check_symbolic_shapes.py KILNC KILN_RUN WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402

BATCHES = (1, 3, 8)


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}")
    return p


def main():
    kilnc, kiln_run, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    model, _, _ = export_models.classifier("resnet18")
    onnx_path = os.path.join(work, "resnet18_batch.onnx")
    x8 = torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.onnx.export(model, (x8[:1],), onnx_path, opset_version=export_models.OPSET,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          do_constant_folding=True)
        ref = model(x8).numpy()
    pkg = os.path.join(work, "resnet18_batch.kiln")
    if os.path.exists(pkg):
        os.remove(pkg)
    run([kilnc, "compile", onnx_path, "--dim", "batch=1..8", "-o", pkg, "--quiet"])
    info = run([kiln_run, pkg, "--info"]).stdout
    if "symbol 0: batch in [1, 8]" not in info or "batch<=8,3,224,224" not in info:
        sys.exit(f"FAILED: kiln-run --info does not show the symbol:\n{info}")
    matched = 0
    for b in BATCHES:
        xin = os.path.join(work, f"input_b{b}.npy")
        np.save(xin, x8[:b].numpy())
        out_dir = os.path.join(work, f"out_b{b}")
        run([kiln_run, pkg, "--input", f"input={xin}", "--output-dir", out_dir])
        got = np.load(os.path.join(out_dir, "output.npy"))
        want = ref[:b]
        if got.shape != want.shape:
            print(f"batch {b}: shape {got.shape}, PyTorch {want.shape}")
            continue
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        same_top1 = bool((got.argmax(1) == want.argmax(1)).all())
        ok = err <= 1e-4 and same_top1
        print(f"batch {b}: output {got.shape}, max relative error {err:.2e}, "
              f"top-1 {'same' if same_top1 else 'DIFFERENT'}: {'ok' if ok else 'MISMATCH'}")
        matched += ok
    # A batch outside the bounds is refused by the runtime, naming input, axis, value, bounds.
    x9 = os.path.join(work, "input_b9.npy")
    np.save(x9, np.zeros((9, 3, 224, 224), np.float32))
    p = run([kiln_run, pkg, "--input", f"input={x9}"], expect_ok=False)
    refusals = 0
    if p.returncode != 0 and "'input' axis 0 is 9: 'batch' must be in [1, 8]" in p.stdout:
        refusals += 1
    else:
        print(f"batch 9 was not refused as expected:\n{p.stdout}")
    # min > max, and a symbol no input defines: clear errors, no package written.
    for dim, words in (("batch=9..3", "the minimum 9 is above the maximum 3"),
                       ("seq=1..16", "no input defines the symbol 'seq'")):
        bad = os.path.join(work, "bad.kiln")
        p = run([kilnc, "compile", onnx_path, "--dim", dim, "-o", bad, "--quiet"], expect_ok=False)
        if p.returncode != 0 and words in p.stdout and not os.path.exists(bad):
            refusals += 1
        else:
            print(f"--dim {dim} was not refused as expected:\n{p.stdout}")
    print(f"symbolic shapes: {matched} of {len(BATCHES)} batches match PyTorch, "
          f"{refusals} of 3 bad inputs refused")
    sys.exit(0 if matched == len(BATCHES) and refusals == 3 else 1)


if __name__ == "__main__":
    main()
