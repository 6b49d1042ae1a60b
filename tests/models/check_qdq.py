#!/usr/bin/python3
"""tools/scripts/quantize.py end to end on resnet18 (issue #16): the fp32 model (export_models.py)
is calibrated with kiln on 4 seeded inputs and written in QDQ form; the result must hold int8
per-channel weights behind DequantizeLinear for every Conv and the Gemm, uint8 Q/DQ pairs on
their activations, int32 biases; kilnc compiles it and kiln-run's output keeps PyTorch's top-1
class within 5% of the largest logit. A model with nothing to quantize is refused and nothing is
written.

Usage: check_qdq.py KILNC KILN_RUN WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_models  # noqa: E402

QUANTIZE = os.path.join(TOP, "tools", "scripts", "quantize.py")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_qdq.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    export_models.export("resnet18", work)
    d = os.path.join(work, "resnet18")
    x = np.load(os.path.join(d, "input.npy"))
    cal = []
    for i in range(4):
        cal.append(os.path.join(d, f"calibration{i}.npy"))
        np.save(cal[-1], np.random.default_rng(100 + i).standard_normal(x.shape).astype(np.float32))
    qdq = os.path.join(d, "model_qdq.onnx")
    subprocess.run([sys.executable, QUANTIZE, os.path.join(d, "model.onnx"), qdq, "--calibration",
                    *cal, "--kilnc", kilnc, "--kiln-run", kiln_run], check=True)
    problems = []
    m = onnx.load(qdq)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    producer = {o: n for n in m.graph.node for o in n.output}
    ops = [n for n in m.graph.node if n.op_type in ("Conv", "Gemm")]
    for n in ops:
        w = producer.get(n.input[1])
        if not w or w.op_type != "DequantizeLinear" or inits[w.input[0]].dtype != np.int8:
            problems.append(f"{n.name}: the weight is not int8 behind a DequantizeLinear")
            continue
        if inits[w.input[1]].shape != (inits[w.input[0]].shape[0],):
            problems.append(f"{n.name}: the weight scale is not per output channel")
        a = producer.get(n.input[0])
        if not a or a.op_type != "DequantizeLinear" or a.input[0] not in producer or \
                producer[a.input[0]].op_type != "QuantizeLinear":
            problems.append(f"{n.name}: the activation has no Q/DQ pair")
        if len(n.input) > 2:
            b = producer.get(n.input[2])
            if not b or inits[b.input[0]].dtype != np.int32:
                problems.append(f"{n.name}: the bias is not int32")
    pkg = os.path.join(d, "model_qdq.kiln")
    subprocess.run([kilnc, "compile", qdq, "-o", pkg, "--quiet"], check=True)
    out = os.path.join(d, "qdq_out")
    subprocess.run([kiln_run, pkg, "--input", f"input={os.path.join(d, 'input.npy')}",
                    "--output-dir", out], check=True, stdout=subprocess.DEVNULL)
    got = np.load(os.path.join(out, "output.npy"))
    ref = np.load(os.path.join(d, "reference.npy"))
    diff, scale = float(np.abs(got - ref).max()), float(np.abs(ref).max())
    if int(got.argmax()) != int(ref.argmax()):
        problems.append(f"top-1 {int(got.argmax())}, PyTorch fp32 says {int(ref.argmax())}")
    if not diff <= 0.05 * scale:
        problems.append(f"max |diff| {diff:.3g} > 5% of max |ref| ({scale:.3g})")
    print(f"resnet18 QDQ: {len(ops)} ops quantized, max |diff| to fp32 {diff:.3g} "
          f"({diff / scale:.2%} of max |ref|), top-1 {int(got.argmax())}")

    # Nothing to quantize: refused, no output file.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    plain = os.path.join(work, "relu.onnx")
    onnx.save(helper.make_model(g), plain)
    np.save(os.path.join(work, "relu_cal.npy"), np.ones(4, np.float32))
    bad_out = os.path.join(work, "relu_qdq.onnx")
    r = subprocess.run([sys.executable, QUANTIZE, plain, bad_out, "--calibration",
                        os.path.join(work, "relu_cal.npy"), "--kilnc", kilnc, "--kiln-run", kiln_run],
                       capture_output=True, text=True)
    if r.returncode == 0 or "no Conv, Gemm or MatMul" not in r.stderr or os.path.exists(bad_out):
        problems.append(f"a model with nothing to quantize was not refused cleanly: {r.stderr.strip()}")
    for p in problems:
        print(f"  {p}")
    print(f"qdq: {'all checks pass' if not problems else f'{len(problems)} problems'}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
