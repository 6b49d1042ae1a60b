#!/usr/bin/python3
"""If, Scan and Loop beyond the node tests, each a small ONNX model run through kilnc and
kiln-run and compared with numpy: an If on a run-time condition (both values of it), an If on a
constant condition (only the taken branch is built: the other holds an op kiln lacks), a Scan
with reversed input and output directions and non-zero axes (and the same over 3000 steps, a loop
group), a Loop whose trip count is a
constant and whose body stops it early through a constant condition (unrolled), a Loop nested in
an If, and loop groups (the body built once, the runtime repeating it): a 4096-step Loop, one of
4096 steps of a 300-node body, one whose condition the body computes, and one over a trip count
given at run time whose stacked output's first dim is a --dim range (run at several counts, and
refused at run time past the range).
An If whose branches compute much (a MatMul each) or divide integers runs as two conditional
groups: only the taken branch runs (an untaken division by zero never happens).
Bad input is refused naming the node, and nothing is written: a trip count past the bound (at run
time), stacked outputs with no bound on the iterations, a Scan that unrolls too many nodes.

Usage: control_flow.py KILNC KILN_RUN WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_case

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value)))


def model(nodes, inputs, outputs, inits=(), opset=16):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def branch(name, nodes, outputs):
    return helper.make_graph(nodes, name, [], outputs)


def if_runtime():
    then = branch("then", [helper.make_node("Mul", ["x", "x"], ["t"])], [vi("t", F, [2, 3])])
    other = branch("else", [helper.make_node("Neg", ["x"], ["e"])], [vi("e", F, [2, 3])])
    node = helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then, else_branch=other)
    return model([node], [vi("c", B, []), vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def if_constant():
    # The untaken branch holds Bernoulli, which kiln does not build (random): the constant
    # condition skips it.
    then = branch("then", [helper.make_node("Relu", ["x"], ["t"])], [vi("t", F, [4])])
    other = branch("else", [helper.make_node("Bernoulli", ["x"], ["e"])], [vi("e", F, [4])])
    node = helper.make_node("If", ["c"], ["y"], name="fixed", then_branch=then, else_branch=other)
    init = numpy_helper.from_array(np.array(True), "c")
    return model([node], [vi("x", F, [4])], [vi("y", F, [4])], [init])


def scan_reversed():
    # state s (3,), scan input x (3, 5) scanned over axis 1 in reverse; outputs s + x_t stacked
    # along axis 1, in reverse.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "x_t"], ["y_t"])],
        "body", [vi("s_in", F, [3]), vi("x_t", F, [3])], [vi("s_out", F, [3]), vi("y_t", F, [3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], name="scan", body=body,
                            num_scan_inputs=1, scan_input_axes=[1], scan_input_directions=[1],
                            scan_output_axes=[1], scan_output_directions=[1])
    return model([node], [vi("s0", F, [3]), vi("x", F, [3, 5])], [vi("s", F, [3]), vi("y", F, [3, 5])])


def scan_long(steps):
    # As scan_reversed, over `steps` elements: past the unroll line, a loop group.
    m = scan_reversed()
    m.graph.input[1].CopyFrom(vi("x", F, [3, steps]))
    m.graph.output[1].CopyFrom(vi("y", F, [3, steps]))
    return m


def scan_reference(s0, x):
    s, ys = s0.copy(), []
    for t in range(x.shape[1] - 1, -1, -1):
        s = s + x[:, t]
        ys.append(s * x[:, t])
    return s, np.stack(ys[::-1], axis=1)


def if_heavy():
    # Branches with a reduction (a MatMul each): conditional groups, only the taken one runs.
    then = branch("then", [helper.make_node("MatMul", ["x", "w"], ["t"])], [vi("t", F, [2, 4])])
    other = branch("else", [helper.make_node("MatMul", ["x", "w2"], ["m"]),
                            helper.make_node("Relu", ["m"], ["e"])], [vi("e", F, [2, 4])])
    node = helper.make_node("If", ["c"], ["y"], name="heavy", then_branch=then, else_branch=other)
    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "w")
    w2 = numpy_helper.from_array(np.linspace(1, -2, 12, dtype=np.float32).reshape(3, 4), "w2")
    return model([node], [vi("c", B, []), vi("x", F, [2, 3])], [vi("y", F, [2, 4])], [w, w2])


def loop_stops_early():
    # M = 10, but the body's condition (i < 3, from the iteration number) stops after 4 steps.
    body = helper.make_graph(
        [const("three", np.int64(3)),
         helper.make_node("Less", ["i", "three"], ["cont"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["acc_in", "fi"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "x"], ["row"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [2])],
        [vi("cont", B, []), vi("acc_out", F, [2]), vi("row", F, [2])])
    node = helper.make_node("Loop", ["M", "", "a0"], ["acc", "rows"], name="loop", body=body)
    init = numpy_helper.from_array(np.array(10, np.int64), "M")
    return model([node], [vi("a0", F, [2]), vi("x", F, [2])], [vi("acc", F, [2]), vi("rows", F, [4, 2])],
                 [init])


def loop_reference(a0, x):
    acc, rows = a0.copy(), []
    for i in range(10):
        acc = acc + np.float32(i)
        rows.append(acc * x)
        if not i < 3:
            break
    return acc, np.stack(rows)


def loop_in_if():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["v_in", "x"], ["v_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])],
        [vi("c_out", B, []), vi("v_out", F, [3])])
    then = branch("then", [const("M", np.int64(3)), const("T", np.array(True)),
                           helper.make_node("Loop", ["M", "T", "x"], ["t"], body=body)],
                  [vi("t", F, [3])])
    other = branch("else", [helper.make_node("Sub", ["x", "x"], ["e"])], [vi("e", F, [3])])
    node = helper.make_node("If", ["c"], ["y"], name="outer", then_branch=then, else_branch=other)
    return model([node], [vi("c", B, []), vi("x", F, [3])], [vi("y", F, [3])])


def if_dtype_mismatch():
    then = branch("then", [helper.make_node("Identity", ["x"], ["t"])], [vi("t", F, [2])])
    other = branch("else", [helper.make_node("Cast", ["x"], ["e"], to=I64)], [vi("e", I64, [2])])
    node = helper.make_node("If", ["c"], ["y"], name="mixed", then_branch=then, else_branch=other)
    return model([node], [vi("c", B, []), vi("x", F, [2])], [vi("y", F, [2])])


def if_integer_division():
    then = branch("then", [helper.make_node("Div", ["a", "b"], ["t"])], [vi("t", I64, [2])])
    other = branch("else", [helper.make_node("Identity", ["a"], ["e"])], [vi("e", I64, [2])])
    node = helper.make_node("If", ["c"], ["y"], name="divides", then_branch=then, else_branch=other)
    return model([node], [vi("c", B, []), vi("a", I64, [2]), vi("b", I64, [2])], [vi("y", I64, [2])])


def loop_runtime_condition():
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["v_in"], ["s"], keepdims=0),
         const("ten", np.float32(10)),
         helper.make_node("Less", ["s", "ten"], ["c_out"]),
         helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [2])],
        [vi("c_out", B, []), vi("v_out", F, [2])])
    node = helper.make_node("Loop", ["M", "", "x"], ["y"], name="until", body=body)
    init = numpy_helper.from_array(np.array(8, np.int64), "M")
    return model([node], [vi("x", F, [2])], [vi("y", F, [2])], [init])


def loop_chain(steps, body_pairs, name):
    """A Loop of `steps` iterations whose body is `body_pairs` times x = tanh(x * 1.01): unrolled,
    a chain steps * 2 * body_pairs nodes deep."""
    nodes, prev = [const("c", np.float32(1.01))], "x_in"
    for k in range(body_pairs):
        nodes += [helper.make_node("Mul", [prev, "c"], [f"m{k}"]),
                  helper.make_node("Tanh", [f"m{k}"], [f"t{k}"])]
        prev = f"t{k}"
    nodes += [helper.make_node("Identity", ["c_in"], ["c_out"]),
              helper.make_node("Identity", [prev], ["x_out"])]
    body = helper.make_graph(nodes, "body", [vi("i", I64, []), vi("c_in", B, []),
                                             vi("x_in", F, [4, 4])],
                             [vi("c_out", B, []), vi("x_out", F, [4, 4])])
    node = helper.make_node("Loop", ["M", "", "x"], ["y"], name=name, body=body)
    init = numpy_helper.from_array(np.array(steps, np.int64), "M")
    return model([node], [vi("x", F, [4, 4])], [vi("y", F, [4, 4])], [init])


def scan_chain(steps, body_pairs, name):
    """A Scan over `steps` elements whose body is `body_pairs` times s = tanh(s * x_t): unrolled,
    steps * 2 * body_pairs nodes."""
    nodes, prev = [], "s_in"
    for k in range(body_pairs):
        nodes += [helper.make_node("Mul", [prev, "x_t"], [f"m{k}"]),
                  helper.make_node("Tanh", [f"m{k}"], [f"t{k}"])]
        prev = f"t{k}"
    nodes.append(helper.make_node("Identity", [prev], ["s_out"]))
    body = helper.make_graph(nodes, "body", [vi("s_in", F, [4]), vi("x_t", F, [4])],
                             [vi("s_out", F, [4])])
    node = helper.make_node("Scan", ["s0", "x"], ["s"], name=name, body=body, num_scan_inputs=1)
    return model([node], [vi("s0", F, [4]), vi("x", F, [steps, 4])], [vi("s", F, [4])])


def scan_in_loop(steps, body_pairs):
    """scan_chain inside the body of a Loop with a run-time trip count: a Scan in a loop group's
    body is unrolled, so this builds steps * 2 * body_pairs nodes inline."""
    inner = scan_chain(steps, body_pairs, "inner").graph
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"])] + list(inner.node),
        "outer", [vi("i", I64, []), vi("c_in", B, []), vi("s0", F, [4])],
        [vi("c_out", B, []), vi("s", F, [4])])
    node = helper.make_node("Loop", ["M", "", "a0"], ["y"], name="outer", body=body)
    return model([node], [vi("M", I64, []), vi("a0", F, [4]), vi("x", F, [steps, 4])],
                 [vi("y", F, [4])])


def loop_runtime_trips(first_dim):
    """rows[i] = acc * (i + 1) with acc += x, for a trip count M given at run time; the stacked
    output's first dim is `first_dim` (a dim parameter, or None: unknown)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         const("one", np.int64(1)),
         helper.make_node("Add", ["i", "one"], ["i1"]),
         helper.make_node("Cast", ["i1"], ["fi"], to=F),
         helper.make_node("Mul", ["acc_out", "fi"], ["row"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [3])],
        [vi("c_out", B, []), vi("acc_out", F, [3]), vi("row", F, [3])])
    node = helper.make_node("Loop", ["M", "", "a0"], ["acc", "rows"], name="runtime_trips",
                            body=body)
    rows = vi("rows", F, [first_dim, 3])
    return model([node], [vi("M", I64, []), vi("a0", F, [3]), vi("x", F, [3])],
                 [vi("acc", F, [3]), rows])


def runtime_trips_reference(m, a0, x):
    acc, rows = a0.copy(), []
    for i in range(m):
        acc = acc + x
        rows.append(acc * np.float32(i + 1))
    return acc, np.array(rows, np.float32).reshape(m, 3)


def compile_and_run(kilnc, kiln_run, work, name, m, data):
    onnx.checker.check_model(m)
    out = onnx_case.run_model(kilnc, kiln_run, os.path.join(work, name), m, data)
    return [out[o.name] for o in m.graph.output]


def matches(name, got, want):
    ok = len(got) == len(want) and all(
        g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))
    print(f"{name:28s} {'ok' if ok else 'FAILED'}")
    if not ok:
        print(f"  got {got}\n  want {want}")
    return ok


def refused(kilnc, work, name, m, node, want):
    return onnx_case.refused(kilnc, os.path.join(work, name), m, node, want, f"{name:28s}")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: control_flow.py KILNC KILN_RUN WORK_DIR")
    kilnc, kiln_run, work = sys.argv[1:]
    rng = np.random.default_rng(3)
    ok = []
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for c in (True, False):
        got = compile_and_run(kilnc, kiln_run, work, f"if_runtime_{c}", if_runtime(),
                              {"c": np.array(c), "x": x})
        ok.append(matches(f"if on a run-time {c}", got, [x * x if c else -x]))
    v = rng.standard_normal(4).astype(np.float32)
    got = compile_and_run(kilnc, kiln_run, work, "if_constant", if_constant(), {"x": v})
    ok.append(matches("if on a constant", got, [np.maximum(v, 0)]))
    s0, xs = rng.standard_normal(3).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    got = compile_and_run(kilnc, kiln_run, work, "scan_reversed", scan_reversed(), {"s0": s0, "x": xs})
    ok.append(matches("scan reversed, axis 1", got, list(scan_reference(s0, xs))))
    xl = (rng.standard_normal((3, 3000)) * 0.01).astype(np.float32)
    got = compile_and_run(kilnc, kiln_run, work, "scan_long", scan_long(3000), {"s0": s0, "x": xl})
    ok.append(matches("a 3000-step scan group", got, list(scan_reference(s0, xl))))
    a0, x2 = rng.standard_normal(2).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    got = compile_and_run(kilnc, kiln_run, work, "loop_stops_early", loop_stops_early(),
                          {"a0": a0, "x": x2})
    ok.append(matches("loop stopped by its body", got, list(loop_reference(a0, x2))))
    x3 = rng.standard_normal(3).astype(np.float32)
    for c in (True, False):
        got = compile_and_run(kilnc, kiln_run, work, f"loop_in_if_{c}", loop_in_if(),
                              {"c": np.array(c), "x": x3})
        ok.append(matches(f"loop inside an if ({c})", got, [4 * x3 if c else 0 * x3]))
    # 4096 steps of an 8-pair body: a loop group (unrolled, a chain 65536 nodes deep, which the
    # compiler once crashed on).
    x4 = rng.standard_normal((4, 4)).astype(np.float32)
    want = x4.astype(np.float64)
    for _ in range(4096 * 8):
        want = np.tanh(want * np.float32(1.01))
    got = compile_and_run(kilnc, kiln_run, work, "loop_deep", loop_chain(4096, 8, "deep"), {"x": x4})
    ok.append(matches("a 4096-step loop group", got, [want.astype(np.float32)]))
    # A body of 300 nodes for 4096 steps: 1.2 million nodes unrolled, one body as a loop group.
    want = x4.astype(np.float64)
    for _ in range(4096 * 150):
        want = np.tanh(want * np.float32(1.01))
    got = compile_and_run(kilnc, kiln_run, work, "loop_big", loop_chain(4096, 150, "big"), {"x": x4})
    ok.append(matches("a 4096 x 300-node loop group", got, [want.astype(np.float32)]))
    # A condition the body computes: doubles v while its sum was below 10, at most 8 times.
    for start in (0.25, 3.0, 20.0):
        v = np.array([start, 0.5], np.float32)
        want = v.copy()
        for _ in range(8):  # the condition is on the state the iteration starts from
            go = want.sum() < 10
            want = want + want
            if not go:
                break
        got = compile_and_run(kilnc, kiln_run, work, f"loop_until_{start}", loop_runtime_condition(),
                              {"x": v})
        ok.append(matches(f"a loop until its body says ({start})", got, [want]))
    # A trip count given at run time; the stacked rows' first dim 'steps' is given a range.
    d = os.path.join(work, "loop_runtime_trips")
    pkg = onnx_case.compile_model(kilnc, d, loop_runtime_trips("steps"), ["--dim", "steps=0..6"])
    a0, x5 = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    for m in (0, 1, 4, 6):
        out = onnx_case.run_package(kiln_run, d, pkg, loop_runtime_trips("steps"),
                                    {"M": np.array(m, np.int64), "a0": a0, "x": x5}, f"m{m}")
        ok.append(matches(f"a run-time trip count of {m}", [out["acc"], out["rows"]],
                          list(runtime_trips_reference(m, a0, x5))))
    ok.append(onnx_case.run_refused(
        kiln_run, d, pkg, {"M": np.array(7, np.int64), "a0": a0, "x": x5},
        "node 'runtime_trips' (Loop, opset 16): trip count 7: it would run past the 6 iterations",
        f"{'a trip count past the bound':28s}"))
    ok.append(refused(kilnc, work, "loop_unbounded", loop_runtime_trips(None), "runtime_trips",
                      "scan output 0 ('rows') needs a bound on the iterations"))
    ok.append(refused(kilnc, work, "loop_param_unbounded", loop_runtime_trips("steps"),
                      "runtime_trips", "scan output 0 ('rows') needs a bound on the iterations"))
    # The same as a Scan (a loop group past 4096 nodes); inside a Loop's body, where it unrolls,
    # it is past the limit on nodes built inline.
    x6 = (rng.standard_normal((4096, 4)) * 0.5 + 1).astype(np.float32)
    s6 = rng.standard_normal(4).astype(np.float32)
    want = s6.astype(np.float64)
    for t in range(4096):
        for _ in range(150):
            want = np.tanh(want * x6[t])
    got = compile_and_run(kilnc, kiln_run, work, "scan_big", scan_chain(4096, 150, "big"),
                          {"s0": s6, "x": x6})
    ok.append(matches("a 4096 x 300-node scan group", got, [want.astype(np.float32)]))
    ok.append(refused(kilnc, work, "scan_too_large", scan_in_loop(4096, 150), "inner",
                      "control flow that builds more than 1048576 nodes inline"))
    ok.append(refused(kilnc, work, "if_dtype_mismatch", if_dtype_mismatch(), "mixed",
                      "output 0 is float32 in then_branch and int64 in else_branch"))
    # Integer division in a branch: conditional groups, so the untaken one never divides by 0.
    ai, bi = np.array([7, 9], np.int64), np.array([2, 0], np.int64)
    got = compile_and_run(kilnc, kiln_run, work, "if_division_false", if_integer_division(),
                          {"c": np.array(False), "a": ai, "b": bi})
    ok.append(matches("if dividing, not taken", got, [ai]))
    got = compile_and_run(kilnc, kiln_run, work, "if_division_true", if_integer_division(),
                          {"c": np.array(True), "a": ai, "b": np.array([2, 4], np.int64)})
    ok.append(matches("if dividing, taken", got, [ai // np.array([2, 4])]))
    xh = rng.standard_normal((2, 3)).astype(np.float32)
    wt = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    we = np.linspace(1, -2, 12, dtype=np.float32).reshape(3, 4)
    for c in (True, False):
        got = compile_and_run(kilnc, kiln_run, work, f"if_heavy_{c}", if_heavy(),
                              {"c": np.array(c), "x": xh})
        ok.append(matches(f"conditional groups ({c})", got,
                          [xh @ wt if c else np.maximum(xh @ we, 0)]))
    info = json.loads(subprocess.run([kilnc, "inspect", os.path.join(work, "if_heavy_True", "m.kiln"),
                                      "--json"], capture_output=True, text=True).stdout)
    ok.append(len(info["loops"]) == 2)
    print(f"{'an If as two conditional groups':28s} {'ok' if ok[-1] else 'FAILED'}")
    print(f"control flow: {sum(ok)} of {len(ok)} checks pass")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
