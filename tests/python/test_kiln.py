"""The Python module `kiln` (runtime/python/kiln) against the C runtime's own tool: the same
package and input through kiln.Model/Session and through kiln-run give bit-identical outputs;
errors carry the status and the runtime's message; sessions run from several threads.

Run by ctest (python.kiln_module) with KILN_RT_LIBRARY, KILNC, KILN_RUN and KILN_TEST_PACKAGES set.
"""
import os
import subprocess
import threading

import numpy as np
import pytest

import kiln

PACKAGES = os.environ["KILN_TEST_PACKAGES"]
CONVNET = os.path.join(PACKAGES, "convnet.kiln")


def image(seed):
    return np.random.default_rng(seed).standard_normal((2, 3, 32, 32)).astype(np.float32)


def kiln_run_outputs(tmp_path, package, x):
    np.save(tmp_path / "image.npy", x)
    subprocess.run([os.environ["KILN_RUN"], package, "--input", f"image={tmp_path / 'image.npy'}",
                    "--output-dir", str(tmp_path / "out")], check=True, capture_output=True)
    return {n: np.load(tmp_path / "out" / f"{n}.npy") for n in ("probs", "features")}


def test_model_describes_its_tensors():
    m = kiln.Model(CONVNET)
    assert [(t.name, t.dtype, t.shape) for t in m.inputs] == [("image", np.float32, (2, 3, 32, 32))]
    assert [(t.name, t.shape) for t in m.outputs] == [("probs", (2, 10)), ("features", (2, 32))]
    version, (major, minor) = kiln.version()
    assert version.startswith("0.") and major == 2 and minor >= 1


def test_outputs_match_kiln_run_bit_for_bit(tmp_path):
    x = image(3)
    got = kiln.Model(CONVNET).session(threads=2).run({"image": x})
    want = kiln_run_outputs(tmp_path, CONVNET, x)
    assert set(got) == set(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape
        assert np.array_equal(got[name], want[name]), name
    np.testing.assert_allclose(got["probs"].sum(axis=-1), np.ones(2), rtol=1e-5)  # a softmax


def test_errors_carry_the_status_and_the_message(tmp_path):
    s = kiln.Model(CONVNET).session()
    with pytest.raises(kiln.Error) as e:
        s.run({"image": np.zeros((2, 3, 30, 30), np.float32)})
    assert e.value.status == "KILN_INVALID_ARGUMENT"
    assert "expected [2,3,32,32], got [2,3,30,30]" in e.value.message
    with pytest.raises(kiln.Error, match="expected float32, got float64"):
        s.run({"image": np.zeros((2, 3, 32, 32))})
    with pytest.raises(kiln.Error, match="no input named 'img'"):
        s.run({"img": image(1)})
    with pytest.raises(kiln.Error) as e:
        s.run({})
    assert e.value.status == "KILN_FAILED_PRECONDITION"
    with pytest.raises(kiln.Error) as e:
        kiln.Model(str(tmp_path / "missing.kiln"))
    assert e.value.status == "KILN_NOT_FOUND"
    junk = tmp_path / "junk.kiln"
    data = bytearray(open(CONVNET, "rb").read())
    data[len(data) // 2] ^= 0xFF
    junk.write_bytes(bytes(data))
    with pytest.raises(kiln.Error) as e:
        kiln.Model(str(junk))
    assert e.value.status in ("KILN_CHECKSUM_MISMATCH", "KILN_INVALID_PACKAGE")
    assert e.value.message
    with pytest.raises(kiln.Error, match="threads must be a positive int"):
        kiln.Model(CONVNET).session(threads=0)


def test_sessions_run_from_several_threads():
    m = kiln.Model(CONVNET)
    inputs = [image(seed) for seed in range(4)]
    expected = [m.session().run({"image": x}) for x in inputs]
    shared = m.session(threads=2)  # one session used by every thread: calls are serialized
    results, errors = {}, []

    def work(i):
        try:
            own = m.session()
            for r in range(5):
                results[(i, r, "own")] = own.run({"image": inputs[i]})
                results[(i, r, "shared")] = shared.run({"image": inputs[i]})
        except Exception as ex:  # noqa: BLE001 (reported below)
            errors.append(ex)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (i, _, _), out in results.items():
        for name in out:
            assert np.array_equal(out[name], expected[i][name])
    assert len(results) == 40


def test_trust_accepts_only_the_signers_packages(tmp_path):
    kilnc = os.environ["KILNC"]
    model = os.path.join(os.environ["KILN_SAMPLES"], "kg", "convnet.kg")
    subprocess.run([kilnc, "keygen", "-o", str(tmp_path / "k")], check=True, capture_output=True)
    subprocess.run([kilnc, "keygen", "-o", str(tmp_path / "other")], check=True,
                   capture_output=True)
    signed = str(tmp_path / "signed.kiln")
    subprocess.run([kilnc, "compile", model, "-o", signed, "--sign", str(tmp_path / "k.key"),
                    "--quiet"], check=True)
    m = kiln.Model(signed, trust=[str(tmp_path / "k.pub")])
    assert np.array_equal(m.session().run({"image": image(5)})["probs"],
                          kiln.Model(CONVNET).session().run({"image": image(5)})["probs"])
    for package, keys in ((signed, [str(tmp_path / "other.pub")]), (CONVNET, [str(tmp_path / "k.pub")])):
        with pytest.raises(kiln.Error) as e:
            kiln.Model(package, trust=keys)
        assert e.value.status == "KILN_SIGNATURE_INVALID"
    with pytest.raises(kiln.Error, match="not a kiln public key"):
        kiln.Model(signed, trust=[str(tmp_path / "k.key")])


def test_variants_are_listed_and_can_be_chosen(tmp_path):
    kilnc = os.environ["KILNC"]
    model = os.path.join(os.environ["KILN_SAMPLES"], "kg", "convnet.kg")
    machine = os.uname().machine
    cpus = ["generic", "cortex-a76"] if machine == "aarch64" else ["x86-64-v2", "x86-64-v3"]
    fat = str(tmp_path / "fat.kiln")
    subprocess.run([kilnc, "compile", model, "-o", fat, "--cpu", ",".join(cpus), "--quiet"],
                   check=True)
    m = kiln.Model(fat)
    assert [v[0] for v in m.variants] == cpus
    runs = [cpu for cpu, runs_here, _ in m.variants if runs_here]
    assert [cpu for cpu, _, loaded in m.variants if loaded] == runs[-1:]
    want = kiln.Model(CONVNET).session().run({"image": image(7)})["probs"]
    for cpu in runs:
        forced = kiln.Model(fat, variant=cpu)
        assert [c for c, _, loaded in forced.variants if loaded] == [cpu]
        np.testing.assert_allclose(forced.session().run({"image": image(7)})["probs"], want,
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.Error) as e:
        kiln.Model(fat, variant="no-such-cpu")
    assert e.value.status == "KILN_INVALID_ARGUMENT" and "no-such-cpu" in str(e.value)


def test_a_symbolic_package_runs_every_size_in_its_bounds(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "w")])
    model = str(tmp_path / "mlp.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    package = str(tmp_path / "mlp.kiln")
    subprocess.run([os.environ["KILNC"], "compile", model, "--dim", "batch=1..5", "-o", package,
                    "--quiet"], check=True)
    m = kiln.Model(package)
    assert m.symbols == [("batch", 1, 5)]
    assert m.inputs[0].axis_symbols == (0, -1) and m.inputs[0].shape == (5, 4)
    s = m.session()
    for n in (1, 2, 5):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        y = s.run({"x": x})["y"]
        assert y.shape == (n, 3)
        np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-6, atol=1e-6)
    with pytest.raises(kiln.Error) as e:
        s.run({"x": np.zeros((6, 4), np.float32)})
    assert e.value.status == "KILN_INVALID_ARGUMENT" and "'batch' must be in [1, 5]" in str(e.value)
