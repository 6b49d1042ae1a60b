#!/usr/bin/python3
"""tools/scripts/quantize.py --dynamic end to end on the transformer encoder (issue #16): every
MatMul and Gemm with a constant weight (including the weights the exporter shares through
Identity nodes) becomes DynamicQuantizeLinear -> MatMulInteger (int8 weights, one scale per
output column, zero point 0) -> Cast -> Mul; kilnc compiles it onto the integer dot-product
kernels and kiln-run's output stays within 2% of PyTorch's fp32 output (the int8 error; ONNX
Runtime on the same model is compared in tools/bench/run_benchmarks.py). Bad use is refused with
nothing written: --dynamic with --calibration, and a model with nothing to quantize.

Usage: check_dynamic_quant.py KILNC KILN_RUN WORK_DIR
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
        sys.exit("usage: check_dynamic_quant.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    export_models.export("transformer", work)
    d = os.path.join(work, "transformer")
    fp32 = onnx.load(os.path.join(d, "model.onnx"))
    inits = {t.name for t in fp32.graph.initializer}
    shared = {n.output[0] for n in fp32.graph.node if n.op_type == "Identity" and n.input[0] in inits}
    linear = [n for n in fp32.graph.node if n.op_type in ("MatMul", "Gemm") and
              (n.input[1] in inits or n.input[1] in shared)]
    dyn = os.path.join(d, "model_dyn.onnx")
    subprocess.run([sys.executable, QUANTIZE, os.path.join(d, "model.onnx"), dyn, "--dynamic"],
                   check=True)
    problems = []
    m = onnx.load(dyn)
    q_inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    mmi = [n for n in m.graph.node if n.op_type == "MatMulInteger"]
    dql = [n for n in m.graph.node if n.op_type == "DynamicQuantizeLinear"]
    left = [n.name for n in m.graph.node if n.op_type in ("MatMul", "Gemm") and
            (n.input[1] in q_inits)]
    if len(mmi) != len(linear):
        problems.append(f"{len(mmi)} MatMulIntegers for {len(linear)} MatMul/Gemm with weights")
    if left:
        problems.append(f"float MatMul/Gemm with weights left: {left}")
    if not dql or len(dql) > len(mmi):
        problems.append(f"{len(dql)} DynamicQuantizeLinears for {len(mmi)} MatMulIntegers")
    for n in mmi:
        w, zw = q_inits.get(n.input[1]), q_inits.get(n.input[3])
        if w is None or w.dtype != np.int8 or w.ndim != 2:
            problems.append(f"{n.name}: the weight is not a 2-D int8 constant")
        elif zw is None or zw.shape != (w.shape[1],) or zw.any():
            problems.append(f"{n.name}: the weight zero point is not 0 per output column")
    pkg = os.path.join(d, "model_dyn.kiln")
    subprocess.run([kilnc, "compile", dyn, "-o", pkg, "--quiet"], check=True)
    out = os.path.join(d, "dyn_out")
    subprocess.run([kiln_run, pkg, "--input", f"ids={os.path.join(d, 'input.npy')}",
                    "--output-dir", out], check=True, stdout=subprocess.DEVNULL)
    got = np.load(os.path.join(out, os.listdir(out)[0]))
    ref = np.load(os.path.join(d, "reference.npy"))
    diff, scale = float(np.abs(got - ref).max()), float(np.abs(ref).max())
    if got.shape != ref.shape or not diff <= 0.02 * scale:
        problems.append(f"output {got.shape}: max |diff| {diff:.3g} > 2% of max |ref| ({scale:.3g})")
    print(f"transformer dynamic int8: {len(mmi)} MatMulIntegers, {len(dql)} DynamicQuantizeLinears, "
          f"max |diff| to fp32 {diff:.3g} ({diff / scale:.2%} of max |ref|)")

    # Refusals: nothing written.
    bad_out = os.path.join(work, "bad_dyn.onnx")
    np.save(os.path.join(work, "cal.npy"), np.zeros(4, np.float32))
    r = subprocess.run([sys.executable, QUANTIZE, os.path.join(d, "model.onnx"), bad_out,
                        "--dynamic", "--calibration", os.path.join(work, "cal.npy")],
                       capture_output=True, text=True)
    if r.returncode == 0 or "not both" not in r.stderr or os.path.exists(bad_out):
        problems.append(f"--dynamic with --calibration was not refused cleanly: {r.stderr.strip()}")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    plain = os.path.join(work, "relu.onnx")
    onnx.save(helper.make_model(g), plain)
    r = subprocess.run([sys.executable, QUANTIZE, plain, bad_out, "--dynamic"],
                       capture_output=True, text=True)
    if r.returncode == 0 or "no MatMul or Gemm" not in r.stderr or os.path.exists(bad_out):
        problems.append(f"a model with nothing to quantize was not refused cleanly: {r.stderr.strip()}")
    for p in problems:
        print(f"  {p}")
    print(f"dynamic quantization: {'all checks pass' if not problems else f'{len(problems)} problems'}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
