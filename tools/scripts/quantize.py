#!/usr/bin/python3
"""Makes a QDQ int8 model from an fp32 ONNX model, with calibration data (issue #16).

    tools/scripts/quantize.py MODEL.onnx OUT.onnx --calibration A.npy [B.npy ...]
        [--input NAME] [--kilnc PATH] [--kiln-run PATH] [--work DIR]
    tools/scripts/quantize.py MODEL.onnx OUT.onnx --dynamic

--dynamic writes the form ONNX Runtime's dynamic quantizer emits for transformers instead (no
calibration): each MatMul or Gemm with a constant 2-D weight becomes DynamicQuantizeLinear of its
input (uint8, the range measured at run time) -> MatMulInteger with the weight int8, symmetric,
per output column -> Cast to float -> Mul by input_scale x weight_scale (-> Add of a Gemm's bias).

What it writes is the QDQ form ONNX Runtime's and PyTorch's quantizers emit: every float tensor
that enters or leaves a Conv, Gemm or MatMul gets a QuantizeLinear -> DequantizeLinear pair
(uint8, asymmetric, per tensor, ranges from calibration); each such op's constant weight becomes
int8, symmetric, per output channel (Conv and Gemm axis 0 or Gemm transB=0 axis 1, MatMul axis
1), behind a DequantizeLinear; its bias becomes int32 with scale input_scale x weight_scale. The
model's own outputs stay float.

Calibration runs the fp32 model with kiln itself: the tensors to quantize are added as model
outputs, the model is compiled with kilnc and run with kiln-run on each calibration file, and
each tensor's range is the min/max over all of them (always including 0). Only onnx and numpy
are used from Python.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUANTIZED_OPS = ("Conv", "Gemm", "MatMul")


def weight_axis(node, w):
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return w.ndim - 1  # MatMul: (K, N), per output column


def activation_tensors(model, inits):
    """Float tensors entering or leaving the quantized ops (not weights, not model outputs)."""
    outputs = {o.name for o in model.graph.output}
    names = []
    for node in model.graph.node:
        if node.op_type not in QUANTIZED_OPS or len(node.input) < 2 or node.input[1] not in inits:
            continue
        for t in (node.input[0], node.output[0]):
            if t and t not in inits and t not in outputs and t not in names:
                names.append(t)
    return names


def calibrate(model, tensors, input_name, files, kilnc, kiln_run, work):
    """min/max of each tensor over the calibration inputs, running the fp32 model with kiln."""
    inferred = onnx.shape_inference.infer_shapes(model)
    info = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.input)}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for t in tensors:
        if t not in info:
            sys.exit(f"quantize: shape inference gives no shape for '{t}'")
        probe.graph.output.append(info[t])
    path = os.path.join(work, "probe.onnx")
    onnx.save(probe, path)
    pkg = os.path.join(work, "probe.kiln")
    subprocess.run([kilnc, "compile", path, "-o", pkg, "--quiet"], check=True)
    lo = {t: 0.0 for t in tensors}
    hi = {t: 0.0 for t in tensors}
    for k, f in enumerate(files):
        out = os.path.join(work, f"out{k}")
        subprocess.run([kiln_run, pkg, "--input", f"{input_name}={f}", "--output-dir", out],
                       check=True, stdout=subprocess.DEVNULL)
        for t in tensors:
            v = np.load(os.path.join(out, re.sub(r"[^A-Za-z0-9._-]", "_", t) + ".npy"))
            lo[t], hi[t] = min(lo[t], float(v.min())), max(hi[t], float(v.max()))
    return lo, hi


def activation_params(lo, hi):
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def replace_graph(model, nodes, new_inits, dropped, min_opset):
    """The model's nodes replaced, the dropped initializers removed (unless still read), the new
    ones added, the default domain's opset raised to min_opset."""
    g = model.graph
    still_used = {i for n in nodes for i in n.input}
    kept = [t for t in g.initializer if t.name not in dropped or t.name in still_used]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < min_opset:
            op.version = min_opset


def quantize(model, ranges):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    lo, hi = ranges
    new_inits, new_nodes, scale_of = [], [], {}
    # One Q -> DQ pair per activation, right after it is produced (or at the top for inputs).
    qdq_for = {}
    for t in lo:
        s, z = activation_params(lo[t], hi[t])
        scale_of[t] = s
        base = re.sub(r"[^A-Za-z0-9_]", "_", t)
        new_inits += [numpy_helper.from_array(np.array(s), f"{base}_scale"),
                      numpy_helper.from_array(np.array(z), f"{base}_zero_point")]
        qdq_for[t] = [helper.make_node("QuantizeLinear", [t, f"{base}_scale", f"{base}_zero_point"],
                                       [f"{base}_q"], name=f"{base}_QuantizeLinear"),
                      helper.make_node("DequantizeLinear", [f"{base}_q", f"{base}_scale",
                                                            f"{base}_zero_point"],
                                       [f"{base}_dq"], name=f"{base}_DequantizeLinear")]
    rename = {t: re.sub(r"[^A-Za-z0-9_]", "_", t) + "_dq" for t in lo}
    dropped = set()
    for t in [i.name for i in g.input if i.name in qdq_for]:
        new_nodes += qdq_for[t]
    for node in g.node:
        n = onnx.NodeProto()
        n.CopyFrom(node)
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
        if node.op_type in QUANTIZED_OPS and len(node.input) >= 2 and node.input[1] in inits \
                and node.input[0] in scale_of:
            w = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)
            axis = weight_axis(node, w)
            moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
            ws = (np.abs(moved).max(axis=1) / 127.0).astype(np.float32)
            ws[ws == 0] = 1.0
            shape = [1] * w.ndim
            shape[axis] = -1
            wq = np.clip(np.rint(w / ws.reshape(shape)), -127, 127).astype(np.int8)
            wname = node.input[1]
            base = re.sub(r"[^A-Za-z0-9_]", "_", wname)
            new_inits += [numpy_helper.from_array(wq, f"{base}_quantized"),
                          numpy_helper.from_array(ws, f"{base}_scale"),
                          numpy_helper.from_array(np.zeros(len(ws), np.int8), f"{base}_zero_point")]
            new_nodes.append(helper.make_node(
                "DequantizeLinear", [f"{base}_quantized", f"{base}_scale", f"{base}_zero_point"],
                [f"{base}_dq"], name=f"{base}_DequantizeLinear", axis=axis))
            n.input[1] = f"{base}_dq"
            dropped.add(wname)
            if len(node.input) > 2 and node.input[2] in inits:
                b = numpy_helper.to_array(inits[node.input[2]]).astype(np.float64)
                bs = (scale_of[node.input[0]] * ws).astype(np.float32)
                if b.shape == bs.shape:
                    bname = node.input[2]
                    bb = re.sub(r"[^A-Za-z0-9_]", "_", bname)
                    bq = np.clip(np.rint(b / bs), -2**31, 2**31 - 1).astype(np.int32)
                    new_inits += [numpy_helper.from_array(bq, f"{bb}_quantized"),
                                  numpy_helper.from_array(bs, f"{bb}_scale"),
                                  numpy_helper.from_array(np.zeros(len(bs), np.int32), f"{bb}_zero_point")]
                    new_nodes.append(helper.make_node(
                        "DequantizeLinear", [f"{bb}_quantized", f"{bb}_scale", f"{bb}_zero_point"],
                        [f"{bb}_dq"], name=f"{bb}_DequantizeLinear", axis=0))
                    n.input[2] = f"{bb}_dq"
                    dropped.add(bname)
        new_nodes.append(n)
        for o in node.output:
            if o in qdq_for:
                new_nodes += qdq_for[o]
    # QuantizeLinear with per-axis DequantizeLinear needs opset 13.
    replace_graph(model, new_nodes, new_inits, dropped, 13)
    return model


def quantize_dynamic(model):
    """The dynamic form (see the docstring); one DynamicQuantizeLinear per distinct input."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    new_inits, new_nodes, dynamic = [], [], {}
    dropped, count = set(), 0
    # Exporters share equal weights through Identity nodes (the layers of a TransformerEncoder).
    alias = {}
    for node in g.node:
        if node.op_type == "Identity":
            src = alias.get(node.input[0], node.input[0])
            if src in inits:
                alias[node.output[0]] = src
    for node in g.node:
        w_name = node.input[1] if len(node.input) > 1 else ""
        w_name = alias.get(w_name, w_name)
        attrs = {a.name: a for a in node.attribute}
        gemm_ok = node.op_type == "Gemm" and attrs.get("transA", None) is None or \
            (node.op_type == "Gemm" and attrs["transA"].i == 0)
        alpha_beta_one = all(attrs[k].f == 1.0 for k in ("alpha", "beta") if k in attrs)
        if node.op_type not in ("MatMul", "Gemm") or w_name not in inits or \
                len(inits[w_name].dims) != 2 or (node.op_type == "Gemm" and not (gemm_ok and alpha_beta_one)):
            new_nodes.append(node)
            continue
        w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
        if node.op_type == "Gemm" and attrs.get("transB") is not None and attrs["transB"].i:
            w = w.T
        ws = (np.abs(w).max(axis=0) / 127.0).astype(np.float32)  # per output column
        ws[ws == 0] = 1.0
        wq = np.clip(np.rint(w / ws), -127, 127).astype(np.int8)
        base = re.sub(r"[^A-Za-z0-9_]", "_", node.name or node.output[0])
        new_inits += [numpy_helper.from_array(wq, f"{base}_weight_quantized"),
                      numpy_helper.from_array(ws, f"{base}_weight_scale"),
                      numpy_helper.from_array(np.zeros(ws.shape, np.int8), f"{base}_weight_zero_point")]
        dropped.add(w_name)
        a = node.input[0]
        if a not in dynamic:
            ab = re.sub(r"[^A-Za-z0-9_]", "_", a)
            dynamic[a] = (f"{ab}_quantized", f"{ab}_scale", f"{ab}_zero_point")
            new_nodes.append(helper.make_node("DynamicQuantizeLinear", [a], list(dynamic[a]),
                                              name=f"{ab}_DynamicQuantizeLinear"))
        aq, as_, azp = dynamic[a]
        out = node.output[0]
        tail = f"{base}_scaled" if node.op_type == "Gemm" and len(node.input) > 2 else out
        new_nodes += [
            helper.make_node("MatMulInteger", [aq, f"{base}_weight_quantized", azp,
                                               f"{base}_weight_zero_point"], [f"{base}_int32"],
                             name=f"{base}_MatMulInteger"),
            helper.make_node("Cast", [f"{base}_int32"], [f"{base}_float"], to=TensorProto.FLOAT,
                             name=f"{base}_Cast"),
            helper.make_node("Mul", [as_, f"{base}_weight_scale"], [f"{base}_scale"],
                             name=f"{base}_ScaleMul"),
            helper.make_node("Mul", [f"{base}_float", f"{base}_scale"], [tail], name=f"{base}_Mul")]
        if tail != out:
            new_nodes.append(helper.make_node("Add", [tail, node.input[2]], [out], name=f"{base}_Bias"))
        count += 1
    # DynamicQuantizeLinear and MatMulInteger: opsets 11 and 10.
    replace_graph(model, new_nodes, new_inits, dropped, 11)
    return model, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--calibration", nargs="+", help=".npy inputs (static QDQ form)")
    ap.add_argument("--dynamic", action="store_true",
                    help="DynamicQuantizeLinear + MatMulInteger, no calibration")
    ap.add_argument("--input", help="the model input the calibration files feed (default: the first)")
    ap.add_argument("--kilnc", default=os.path.join(TOP, "build/tools/kilnc/kilnc"))
    ap.add_argument("--kiln-run", default=os.path.join(TOP, "build/tools/kiln-run/kiln-run"))
    ap.add_argument("--work", help="where calibration files go (default: a temporary folder)")
    a = ap.parse_args()
    model = onnx.load(a.model)
    if a.dynamic == bool(a.calibration):
        sys.exit("quantize: give --calibration files (static QDQ) or --dynamic, not both")
    if a.dynamic:
        q, count = quantize_dynamic(model)
        if not count:
            sys.exit("quantize: no MatMul or Gemm with a constant 2-D weight to quantize")
        onnx.checker.check_model(q)
        tmp_out = a.out + ".tmp"
        onnx.save(q, tmp_out)
        os.replace(tmp_out, a.out)  # nothing half-written
        print(f"quantize: {a.out}: the weights of {count} MatMul/Gemm ops quantized to int8, "
              "their inputs dynamically")
        return
    inits = {t.name for t in model.graph.initializer}
    real_inputs = [i.name for i in model.graph.input if i.name not in inits]
    if len(real_inputs) != 1 and not a.input:
        sys.exit(f"quantize: the model has inputs {real_inputs}; name the one to calibrate with --input")
    input_name = a.input or real_inputs[0]
    tensors = activation_tensors(model, inits)
    if not tensors:
        sys.exit("quantize: no Conv, Gemm or MatMul with a constant weight to quantize")
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or tmp
        os.makedirs(work, exist_ok=True)
        ranges = calibrate(model, tensors, input_name, a.calibration, a.kilnc, a.kiln_run, work)
    q = quantize(model, ranges)
    onnx.checker.check_model(q)
    tmp_out = a.out + ".tmp"
    onnx.save(q, tmp_out)
    os.replace(tmp_out, a.out)  # nothing half-written
    n_ops = sum(1 for n in q.graph.node if n.op_type in QUANTIZED_OPS)
    print(f"quantize: {a.out}: {len(tensors)} activations and the weights of {n_ops} ops "
          f"quantized to int8 ({len(a.calibration)} calibration inputs)")


if __name__ == "__main__":
    main()
