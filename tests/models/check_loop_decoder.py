#!/usr/bin/python3
"""A model with a Loop over a run-time number of steps, against PyTorch: a greedy decoder (an
embedding, a GRU cell and an output projection with seeded random weights) whose step PyTorch
exports (torch.onnx.export of the step), wrapped in an ONNX Loop whose trip count is a model
input: each iteration embeds the previous token, updates the hidden state, and picks the next
token by ArgMax; the logits and tokens of every step are the Loop's stacked outputs, their first
dim the dim parameter 'steps'.

Compiled once with `kilnc compile --dim steps=1..32` (a loop group: the package holds one body),
run by `kiln-run` at 1, 5, 17 and 32 steps and compared with PyTorch running the same decoder
step by step: every logit within 1e-4 of max |logit|, the same tokens, the same final state; 33
steps is refused at run time naming the Loop.

Usage: check_loop_decoder.py KILNC KILN_RUN WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

VOCAB, EMBED, HIDDEN, MAX_STEPS = 24, 16, 32, 32
TOLERANCE = 1e-4


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, EMBED)
        self.cell = torch.nn.GRUCell(EMBED, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, VOCAB)

    def forward(self, h, tok):
        h = self.cell(self.embed(tok), h)
        logits = self.out(h)
        return h, logits, torch.argmax(logits, dim=1)


def reference(step, h0, start, steps):
    h, tok, logits, toks = torch.from_numpy(h0), torch.from_numpy(start), [], []
    with torch.no_grad():
        for _ in range(steps):
            h, lg, tok = step(h, tok)
            logits.append(lg.numpy())
            toks.append(tok.numpy())
    return h.numpy(), tok.numpy(), np.stack(logits), np.stack(toks)


def export_decoder(step, path):
    """The step as PyTorch exports it, as the body of a Loop over `steps` iterations."""
    step_path = path + ".step.onnx"
    torch.onnx.export(step, (torch.zeros(1, HIDDEN), torch.zeros(1, dtype=torch.long)), step_path,
                      input_names=["h_in", "tok_in"], output_names=["h_out", "logits", "tok_out"],
                      opset_version=13)
    sg = onnx.load(step_path).graph
    body = helper.make_graph(
        list(sg.node) + [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                         helper.make_node("Identity", ["tok_out"], ["tok_row"])],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, HIDDEN]),
         helper.make_tensor_value_info("tok_in", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, HIDDEN]),
         helper.make_tensor_value_info("tok_out", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, VOCAB]),
         helper.make_tensor_value_info("tok_row", TensorProto.INT64, [1])])
    loop = helper.make_node("Loop", ["steps", "", "h0", "start"],
                            ["h_final", "tok_final", "all_logits", "tokens"], name="decode",
                            body=body)
    graph = helper.make_graph(
        [loop], "greedy_decoder",
        [helper.make_tensor_value_info("steps", TensorProto.INT64, []),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, HIDDEN]),
         helper.make_tensor_value_info("start", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("h_final", TensorProto.FLOAT, [1, HIDDEN]),
         helper.make_tensor_value_info("tok_final", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("all_logits", TensorProto.FLOAT, ["steps", 1, VOCAB]),
         helper.make_tensor_value_info("tokens", TensorProto.INT64, ["steps", 1])],
        initializer=list(sg.initializer))  # the weights, in the body's outer scope
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_loop_decoder.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(7)
    step = Step().eval()
    with torch.no_grad():  # larger weights: the tokens then change from step to step
        for p in step.parameters():
            p.mul_(3.0)
    model = os.path.join(work, "decoder.onnx")
    export_decoder(step, model)
    pkg = os.path.join(work, "decoder.kiln")
    code, out = run([kilnc, "compile", model, "--dim", f"steps=1..{MAX_STEPS}", "-o", pkg])
    if code:
        sys.exit(f"FAILED: kilnc compile\n{out}")
    info = json.loads(run([kilnc, "inspect", pkg, "--json"])[1])
    ok = len(info["loops"]) == 1
    print(f"one loop group in the package: {'ok' if ok else 'FAILED'} ({info['loops']})")
    rng = np.random.default_rng(11)
    h0 = rng.standard_normal((1, HIDDEN)).astype(np.float32)
    start = np.array([3], np.int64)
    np.save(os.path.join(work, "h0.npy"), h0)
    np.save(os.path.join(work, "start.npy"), start)
    for steps in (1, 5, 17, MAX_STEPS):
        np.save(os.path.join(work, "steps.npy"), np.array(steps, np.int64))
        out_dir = os.path.join(work, f"out{steps}")
        code, text = run([kiln_run, pkg, "--input", f"steps={work}/steps.npy", "--input",
                          f"h0={work}/h0.npy", "--input", f"start={work}/start.npy",
                          "--output-dir", out_dir])
        if code:
            print(f"{steps} steps: kiln-run FAILED\n{text}")
            ok = False
            continue
        want = reference(step, h0, start, steps)
        got = [np.load(os.path.join(out_dir, f"{n}.npy"))
               for n in ("h_final", "tok_final", "all_logits", "tokens")]
        scale = float(np.abs(want[2]).max())
        diff = float(np.abs(got[2] - want[2]).max()) if got[2].shape == want[2].shape else np.inf
        good = (got[2].shape == want[2].shape and diff <= TOLERANCE * scale and
                np.array_equal(got[3], want[3]) and np.array_equal(got[1], want[1]) and
                np.abs(got[0] - want[0]).max() <= TOLERANCE * np.abs(want[0]).max())
        distinct = len(set(want[3].ravel().tolist()))
        print(f"{steps:2d} steps: logits {got[2].shape}, max |diff| {diff:.3g} (= {diff / scale:.2g}"
              f" x max |logit|), tokens {'equal' if np.array_equal(got[3], want[3]) else 'DIFFER'}"
              f" ({distinct} distinct): {'ok' if good else 'FAILED'}")
        ok &= bool(good)
    np.save(os.path.join(work, "steps.npy"), np.array(MAX_STEPS + 1, np.int64))
    code, text = run([kiln_run, pkg, "--input", f"steps={work}/steps.npy", "--input",
                      f"h0={work}/h0.npy", "--input", f"start={work}/start.npy", "--output-dir",
                      os.path.join(work, "out_over")])
    refused = code != 0 and "node 'decode' (Loop, opset 13): trip count 33" in text
    print(f"33 steps refused at run time naming the Loop: {'ok' if refused else 'FAILED'}")
    ok &= refused
    print(f"loop decoder: {'all checks pass' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
