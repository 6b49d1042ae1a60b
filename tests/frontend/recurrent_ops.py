#!/usr/bin/python3
"""RNN, GRU and LSTM options the ONNX node tests do not reach (reverse and bidirectional
directions, layout 1, sequence_lens with reverse, clip, non-default activations with alpha/beta,
linear_before_reset, input_forget, peepholes, initial states), each as a one-node ONNX model run
through kilnc and kiln-run and compared with a numpy implementation of the spec's equations;
300-step sequences (loop groups), one package over a symbolic length run at three lengths and
one over a symbolic length and batch at three shapes.
Bad attributes and shapes are refused naming the node, and nothing is written.

Usage: recurrent_ops.py KILNC KILN_RUN WORK_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

import onnx_case

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACT = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
TAKES = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None),
         "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def act_fn(name, alpha, beta):
    return {
        "Sigmoid": sigmoid,
        "Tanh": np.tanh,
        "Relu": lambda x: np.maximum(x, 0),
        "Affine": lambda x: alpha * x + beta,
        "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
        "ThresholdedRelu": lambda x: np.where(x > alpha, x, 0),
        "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "Elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "Softsign": lambda x: x / (1 + np.abs(x)),
        "Softplus": lambda x: np.log1p(np.exp(x)),
    }[name]


def functions(op, attrs, dirs):
    names = attrs.get("activations", DEFAULT_ACT[op] * dirs)
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    out = []
    for n in names:
        da, db = TAKES.get(n, (None, None))
        a = (alphas.pop(0) if alphas else da) if da is not None else 0
        b = (betas.pop(0) if betas else db) if db is not None else 0
        out.append(act_fn(n, a, b))
    per = len(DEFAULT_ACT[op])
    return [out[k * per:(k + 1) * per] for k in range(dirs)]


def reference(op, attrs, x, w, r, b=None, lens=None, h0=None, c0=None, p=None):
    """The ONNX spec's equations, one time step at a time (layout 0 inside)."""
    layout = attrs.get("layout", 0)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, B, _ = x.shape
    D, GH, _ = w.shape
    H = GH // GATES[op]
    clip = attrs.get("clip")
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    direction = attrs.get("direction", "forward")
    acts = functions(op, attrs, D)
    Y = np.zeros((T, D, B, H), np.float64)
    YH = np.zeros((D, B, H)); YC = np.zeros((D, B, H))
    for d in range(D):
        f = acts[d]
        W, R = w[d].astype(np.float64), r[d].astype(np.float64)
        bb = np.zeros(2 * GH) if b is None else b[d].astype(np.float64)
        Wb, Rb = bb[:GH], bb[GH:]
        h = np.zeros((B, H)) if h0 is None else h0[d].astype(np.float64)
        c = np.zeros((B, H)) if c0 is None else c0[d].astype(np.float64)
        reverse = direction == "reverse" or d == 1
        for bi in range(B):
            n = T if lens is None else int(lens[bi])
            hb, cb = h[bi].copy(), c[bi].copy()
            steps = range(n - 1, -1, -1) if reverse else range(n)
            for t in steps:
                xt = x[t, bi].astype(np.float64)
                if op == "RNN":
                    hb = f[0](cl(xt @ W.T + hb @ R.T + Wb + Rb))
                elif op == "GRU":
                    gx = xt @ W.T + Wb
                    z = f[0](cl(gx[:H] + hb @ R[:H].T + Rb[:H]))
                    rr = f[0](cl(gx[H:2 * H] + hb @ R[H:2 * H].T + Rb[H:2 * H]))
                    if attrs.get("linear_before_reset", 0):
                        rec = rr * (hb @ R[2 * H:].T + Rb[2 * H:])
                    else:
                        rec = (rr * hb) @ R[2 * H:].T + Rb[2 * H:]
                    cand = f[1](cl(gx[2 * H:] + rec))
                    hb = (1 - z) * cand + z * hb
                else:
                    g = xt @ W.T + hb @ R.T + Wb + Rb
                    P = np.zeros(3 * H) if p is None else p[d].astype(np.float64)
                    i = f[0](cl(g[:H] + P[:H] * cb))
                    if attrs.get("input_forget", 0):
                        fg = 1 - i
                    else:
                        fg = f[0](cl(g[2 * H:3 * H] + P[2 * H:] * cb))
                    cand = f[1](cl(g[3 * H:]))
                    cb = fg * cb + i * cand
                    o = f[0](cl(g[H:2 * H] + P[H:2 * H] * cb))
                    hb = o * f[2](cb)
                Y[t, d, bi] = hb
            YH[d, bi], YC[d, bi] = hb, cb
    if layout:
        return Y.transpose(2, 0, 1, 3), YH.transpose(1, 0, 2), YC.transpose(1, 0, 2)
    return Y, YH, YC


CASES = [
    # name, op, attrs, (T, B, I, H), optional inputs
    ("rnn_reverse_relu", "RNN", {"direction": "reverse", "activations": ["Relu"]}, (5, 2, 3, 4), "b"),
    ("rnn_bidirectional_layout1", "RNN", {"direction": "bidirectional", "layout": 1,
     "activations": ["Tanh", "LeakyRelu"], "activation_alpha": [0.2]}, (4, 3, 2, 5), "bh"),
    ("gru_bidirectional_lens", "GRU", {"direction": "bidirectional"}, (6, 3, 4, 5), "blh"),
    ("gru_linear_before_reset_clip", "GRU", {"linear_before_reset": 1, "clip": 0.7}, (5, 2, 3, 4), "bh"),
    ("gru_hardsigmoid_layout1", "GRU", {"layout": 1, "activations": ["HardSigmoid", "Softsign"],
     "activation_alpha": [0.3], "activation_beta": [0.4]}, (4, 2, 3, 3), ""),
    ("lstm_bidirectional_peepholes_lens", "LSTM", {"direction": "bidirectional"}, (5, 3, 4, 3), "blhcp"),
    ("lstm_reverse_input_forget_clip", "LSTM", {"direction": "reverse", "input_forget": 1, "clip": 1.5},
     (6, 2, 3, 4), "bhc"),
    ("lstm_layout1_scaledtanh", "LSTM", {"layout": 1, "activations": ["Sigmoid", "ScaledTanh", "Elu"],
     "activation_alpha": [0.9, 0.8], "activation_beta": [1.1]}, (3, 2, 4, 3), "bhcp"),
    # Past 16 steps: loop groups (the step built once, both directions in one iteration).
    ("gru_bidirectional_lens_300_steps", "GRU", {"direction": "bidirectional"}, (300, 3, 4, 5), "blh"),
    ("lstm_bidirectional_peepholes_lens_300_steps", "LSTM", {"direction": "bidirectional"},
     (300, 2, 3, 3), "blhcp"),
    ("rnn_reverse_layout1_300_steps", "RNN", {"direction": "reverse", "layout": 1}, (300, 2, 3, 4), "bh"),
]

# Compiled once over a symbolic sequence length (--dim T=1..64), run at these lengths.
SYMBOLIC = ("lstm_bidirectional_symbolic_length", "LSTM", {"direction": "bidirectional", "layout": 1},
            (64, 2, 3, 4), "blhcp")
SYMBOLIC_LENGTHS = (1, 9, 64)
# Both the length and the batch symbolic (--dim T=1..40 --dim N=1..4), no initial state: the
# states start from zeros of the batch's bound and hold the batch's extent.
SYMBOLIC_BATCH = ("gru_bidirectional_symbolic_batch", "GRU", {"direction": "bidirectional"},
                  (40, 4, 3, 5), "b")
SYMBOLIC_BATCH_RUNS = ((3, 1), (20, 3), (40, 4))


def build(name, op, attrs, dims, opt, rng):
    T, B, I, H = dims
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    G = GATES[op]
    layout = attrs.get("layout", 0)
    data = {"X": rng.standard_normal((B, T, I) if layout else (T, B, I)).astype(np.float32),
            "W": (0.5 * rng.standard_normal((D, G * H, I))).astype(np.float32),
            "R": (0.5 * rng.standard_normal((D, G * H, H))).astype(np.float32)}
    names = ["X", "W", "R", "", "", "", "", ""]
    if "b" in opt:
        data["B"] = (0.3 * rng.standard_normal((D, 2 * G * H))).astype(np.float32)
        names[3] = "B"
    if "l" in opt:
        data["sequence_lens"] = rng.integers(1, T + 1, B).astype(np.int32)
        data["sequence_lens"][0] = T
        names[4] = "sequence_lens"
    state = (B, D, H) if layout else (D, B, H)
    if "h" in opt:
        data["initial_h"] = rng.standard_normal(state).astype(np.float32)
        names[5] = "initial_h"
    if "c" in opt:
        data["initial_c"] = rng.standard_normal(state).astype(np.float32)
        names[6] = "initial_c"
    if "p" in opt:
        data["P"] = (0.5 * rng.standard_normal((D, 3 * H))).astype(np.float32)
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, name=name, hidden_size=H, **attrs)
    inputs = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "sequence_lens"
                                            else TensorProto.FLOAT, v.shape) for k, v in data.items()]
    shapes = {"Y": (B, T, D, H) if layout else (T, D, B, H), "Y_h": state, "Y_c": state}
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs]
    model = helper.make_model(helper.make_graph([node], name, inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 14)])
    return model, data


def symbolic_length(model, layout, batch=False):
    """The model with its time axis (X's and Y's) the dim parameter 'T', and with `batch` its
    batch axis (X's, Y's and the states') 'N' (layout 0)."""
    def param(v, axis, name):
        d = v.type.tensor_type.shape.dim[axis]
        d.ClearField("dim_value")
        d.dim_param = name
    for v in (model.graph.input[0], model.graph.output[0]):
        param(v, 1 if layout else 0, "T")
    if batch:
        param(model.graph.input[0], 1, "N")
        param(model.graph.output[0], 2, "N")
        for v in model.graph.output[1:]:
            param(v, 1, "N")
    return model


def compare(name, op, attrs, got, data):
    want = reference(op, attrs, data["X"], data["W"], data["R"], data.get("B"),
                     data.get("sequence_lens"), data.get("initial_h"), data.get("initial_c"),
                     data.get("P"))
    errs = [float(np.abs(g - w).max()) if g.shape == w.shape else float("inf")
            for g, w in zip(got, want)]
    good = len(got) == (3 if op == "LSTM" else 2) and max(errs) <= 1e-4
    print(f"{name:36s} max |diff| {max(errs):.2g}: {'ok' if good else 'FAILED'}")
    return good


def run(kilnc, kiln_run, work, name, model, data):
    out = onnx_case.run_model(kilnc, kiln_run, os.path.join(work, name), model, data)
    return [out[o] for o in ("Y", "Y_h", "Y_c") if o in out]


def refused(kilnc, work, name, model, want):
    return onnx_case.refused(kilnc, os.path.join(work, name), model, name, want, f"{name:36s}")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: recurrent_ops.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(7)
    ok = []
    for name, op, attrs, dims, opt in CASES:
        model, data = build(name, op, attrs, dims, opt, rng)
        got = run(kilnc, kiln_run, work, name, model, data)
        ok.append(compare(name, op, attrs, got, data))
    # One package over a range of lengths: a loop group whose trip count is the time axis's
    # extent at run time.
    name, op, attrs, dims, opt = SYMBOLIC
    model, _ = build(name, op, attrs, dims, opt, rng)
    model = symbolic_length(model, attrs["layout"])
    d = os.path.join(work, name)
    pkg = onnx_case.compile_model(kilnc, d, model, ["--dim", "T=1..64"])
    for t in SYMBOLIC_LENGTHS:
        _, data = build(name, op, attrs, (t,) + dims[1:], opt, rng)
        out = onnx_case.run_package(kiln_run, d, pkg, model, data, f"t{t}")
        ok.append(compare(f"{name} at {t}", op, attrs, [out[o] for o in ("Y", "Y_h", "Y_c")], data))
    name, op, attrs, dims, opt = SYMBOLIC_BATCH
    model, _ = build(name, op, attrs, dims, opt, rng)
    model = symbolic_length(model, 0, batch=True)
    d = os.path.join(work, name)
    pkg = onnx_case.compile_model(kilnc, d, model, ["--dim", "T=1..40", "--dim", "N=1..4"])
    for t, b in SYMBOLIC_BATCH_RUNS:
        _, data = build(name, op, attrs, (t, b) + dims[2:], opt, rng)
        out = onnx_case.run_package(kiln_run, d, pkg, model, data, f"t{t}_n{b}")
        ok.append(compare(f"{name} at {t}x{b}", op, attrs, [out["Y"], out["Y_h"]], data))
    # Bad input: each refused naming the node.
    bad_dir, _ = build("bad_direction", "GRU", {"direction": "sideways"}, (2, 1, 2, 2), "", rng)
    ok.append(refused(kilnc, work, "bad_direction", bad_dir, "direction 'sideways'"))
    bad_act, _ = build("bad_activation", "RNN", {"activations": ["Swish"]}, (2, 1, 2, 2), "", rng)
    ok.append(refused(kilnc, work, "bad_activation", bad_act, "activation 'Swish'"))
    bad_w, _ = build("bad_weight", "LSTM", {}, (2, 1, 2, 2), "", rng)
    bad_w.graph.input[1].type.tensor_type.shape.dim[1].dim_value = 7
    ok.append(refused(kilnc, work, "bad_weight", bad_w, "W is (1,7,2), expected (1,8,2)"))
    print(f"recurrent ops: {sum(ok)} of {len(ok)} checks pass")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
