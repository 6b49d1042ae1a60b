#!/usr/bin/python3
"""One package over a range of shapes (issue #14), checked against PyTorch through the C runtime.

resnet18 (seeded random weights, the real-model set's) is exported with a dynamic batch axis,
compiled ONCE with `--dim batch=1..8`, and run by kiln-run at batch 1, 3 and 8; the transformer
encoder (embedding + 2 x nn.TransformerEncoderLayer, d_model 256) with a dynamic sequence axis,
compiled once with `--dim seq=1..512`, run at seq 1, 7, 64, 128 and 512; a CRNN-style text
recognizer (conv stack, then a sequence head over the width: a 1-D convolution and a
bidirectional LSTM, a loop group over a symbolic number of steps) over `--dim width=16..256`, run at
widths 48, 100 and 256 (its input's width is its innermost axis). Each output must match
PyTorch within 1e-4 relative to its largest magnitude, at that shape. Then the refusals: a batch
outside the bounds, a --dim range with min > max, a symbol no input defines.

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
SEQS = (1, 7, 64, 128, 512)
WIDTHS = (48, 100, 256)


class Crnn(torch.nn.Module):
    """A CRNN-style text recognizer over a 32-pixel-high line of any width: a conv stack that
    halves the height four times and the width twice, then a sequence head over the width (a
    width-wise 1-D convolution, a bidirectional LSTM and a linear layer per position, CTC-style
    log-probabilities)."""

    def __init__(self, classes=37):
        super().__init__()

        def block(cin, cout, pool):
            return [torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout),
                    torch.nn.ReLU(), torch.nn.MaxPool2d(pool, pool)]

        self.features = torch.nn.Sequential(*block(1, 16, (2, 2)), *block(16, 32, (2, 2)),
                                            *block(32, 64, (2, 1)), *block(64, 64, (2, 1)))
        self.context = torch.nn.Conv1d(128, 96, 3, padding=1)
        self.rnn = torch.nn.LSTM(96, 64, bidirectional=True)
        self.head = torch.nn.Linear(128, classes)
        # Peaked log-probabilities (the default init leaves them near -log(classes) everywhere,
        # where a 1e-4 relative check sees little of the signal).
        torch.nn.init.normal_(self.head.weight, std=0.5)

    def forward(self, x):
        f = self.features(x)                       # [n, 64, 2, w / 4]
        f = f.flatten(1, 2)                        # [n, 128, w / 4]
        f = torch.relu(self.context(f))            # [n, 96, w / 4]
        f, _ = self.rnn(f.permute(2, 0, 1))        # [w / 4, n, 128]
        return self.head(f).log_softmax(-1)        # [w / 4, n, classes]


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}")
    return p


def main():
    kilnc, kiln_run, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    model, _, _ = export_models.classifier("resnet18")
    x8 = torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(5))
    onnx_path, pkg = export_and_compile(kilnc, work, "resnet18_batch", model, x8[:1], "input",
                                        "output", {"input": {0: "batch"}, "output": {0: "batch"}},
                                        "batch=1..8")
    with torch.no_grad():
        ref = model(x8).numpy()
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
    seqs = check_encoder(kilnc, kiln_run, work)
    widths = check_crnn(kilnc, kiln_run, work)
    print(f"symbolic shapes: {matched} of {len(BATCHES)} batches match PyTorch, {seqs} of "
          f"{len(SEQS)} sequence lengths match PyTorch, {widths} of {len(WIDTHS)} widths match "
          f"PyTorch, {refusals} of 3 bad inputs refused")
    ok = matched == len(BATCHES) and seqs == len(SEQS) and widths == len(WIDTHS)
    sys.exit(0 if ok and refusals == 3 else 1)


def export_and_compile(kilnc, work, name, model, example, input_name, output_name, axes, dim):
    """Exports `model` with dynamic `axes` to WORK/NAME.onnx and compiles it once with --dim
    `dim` to WORK/NAME.kiln; returns both paths."""
    onnx_path = os.path.join(work, f"{name}.onnx")
    # (grad enabled: nn.TransformerEncoder's fused no-grad path cannot be exported)
    with torch.enable_grad():
        torch.onnx.export(model, (example,), onnx_path, opset_version=export_models.OPSET,
                          input_names=[input_name], output_names=[output_name],
                          dynamic_axes=axes, do_constant_folding=True)
    pkg = os.path.join(work, f"{name}.kiln")
    if os.path.exists(pkg):
        os.remove(pkg)
    run([kilnc, "compile", onnx_path, "--dim", dim, "-o", pkg, "--quiet"])
    return onnx_path, pkg


def run_and_compare(kiln_run, pkg, work, what, input_name, x, output_name, want):
    """Runs `pkg` on x with kiln-run; whether its output matches `want` (shape, 1e-4 relative)."""
    tag = what.replace(" ", "_")
    xin = os.path.join(work, f"{input_name}_{tag}.npy")
    np.save(xin, x)
    out_dir = os.path.join(work, f"out_{tag}")
    run([kiln_run, pkg, "--input", f"{input_name}={xin}", "--output-dir", out_dir])
    got = np.load(os.path.join(out_dir, f"{output_name}.npy"))
    if got.shape != want.shape:
        print(f"{what}: shape {got.shape}, PyTorch {want.shape}")
        return False
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    ok = err <= 1e-4
    print(f"{what}: output {got.shape}, max relative error {err:.2e}: {'ok' if ok else 'MISMATCH'}")
    return ok


def check_crnn(kilnc, kiln_run, work):
    """The CRNN over --dim width=16..256 (a multiple of 4: the width is pooled twice by 2)."""
    torch.manual_seed(0)
    model = Crnn().eval()
    export_models.randomize_batch_norms(model)
    x = torch.randn(1, 1, 32, 64, generator=torch.Generator().manual_seed(3))
    _, pkg = export_and_compile(kilnc, work, "crnn_width", model, x, "image", "logprobs",
                                {"image": {3: "width"}, "logprobs": {0: "steps"}},
                                "width=16..256")
    matched = 0
    for w in WIDTHS:
        img = torch.randn(1, 1, 32, w, generator=torch.Generator().manual_seed(w))
        with torch.no_grad():
            want = model(img).numpy()
        matched += run_and_compare(kiln_run, pkg, work, f"width {w}", "image", img.numpy(),
                                   "logprobs", want)
    return matched


def check_encoder(kilnc, kiln_run, work):
    """The encoder over --dim seq=1..512: how many of SEQS match PyTorch."""
    model, ids, _ = export_models.transformer()
    onnx_path, pkg = export_and_compile(kilnc, work, "encoder_seq", model, ids, "ids", "output",
                                        {"ids": {1: "seq"}, "output": {1: "seq"}}, "seq=1..512")
    matched = 0
    for n in SEQS:
        x = torch.randint(0, 1000, (1, n), generator=torch.Generator().manual_seed(n))
        with torch.enable_grad():
            want = model(x).detach().numpy()
        matched += run_and_compare(kiln_run, pkg, work, f"seq {n}", "ids", x.numpy(), "output",
                                   want)
    # The same symbol given by name in --shape instead of the model's dim_param.
    named = os.path.join(work, "encoder_named.kiln")
    run([kilnc, "compile", onnx_path, "--shape", "ids=1,seq", "--dim", "seq=1..512", "-o", named,
         "--quiet"])
    out_dir = os.path.join(work, "enc_named_out")
    run([kiln_run, named, "--input", f"ids={os.path.join(work, 'ids_seq_7.npy')}",
         "--output-dir", out_dir])
    same = np.array_equal(np.load(os.path.join(out_dir, "output.npy")),
                          np.load(os.path.join(work, "out_seq_7", "output.npy")))
    print(f"--shape ids=1,seq: seq 7 {'matches' if same else 'DIFFERS FROM'} the dim_param package")
    return matched if same else 0


if __name__ == "__main__":
    main()
