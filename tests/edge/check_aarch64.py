#!/usr/bin/python3
"""AArch64, really run: cross-builds the runtime, kiln-run and the samples with Debian's
gcc-aarch64-linux-gnu (cmake/toolchains/aarch64-linux-gnu.cmake), compiles packages with
`kilnc --target aarch64-linux-gnu`, runs them under `qemu-aarch64 -L /usr/aarch64-linux-gnu`, and
compares with the x86-64 run of the same model (max |diff| <= 1e-4 * max |x86 output|):

  - the digits sample (C) for --cpu generic, cortex-a53, cortex-a72, neoverse-n1 (accuracy and
    logits against the x86-64 package);
  - one digits package with two kernel variants (--cpu generic,cortex-a76): the runtime loads
    the last one qemu's CPU runs, each forced with --variant matches x86-64, and the self-test
    runs on the chosen one;
  - the static sample (samples/static: --emit static-lib --embed-data, libkiln_rt_bare, a fixed
    memory pool) cross-compiled and run;
  - resnet18, mobilenet_v2 and efficientnet_b0 (its SiLU: NEON's exp and sigmoid; seeded random
    weights, tests/models/export_models.py), and their
    embedded self-tests (--embed-selftest, kiln-run --selftest) under qemu;
  - the integer dot-product kernels (QDQ convolutions, MatMulInteger/QLinearMatMul on int8
    weights: tests/frontend/quantized_ops.py's cases) for --cpu generic and cortex-a76 (dotprod),
    bit for bit against the numpy reference of the ONNX spec.

If qemu or the cross toolchain is missing, the test says so and fails (install them with
tools/scripts/install-deps.sh); it is never skipped silently.
Usage: check_aarch64.py KILNC X86_KILN_RUN WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "models"))
import export_models  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "tests", "frontend"))
import quantized_ops  # noqa: E402

QEMU = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]
TOLERANCE = 1e-4


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def cross_build(work):
    for tool in ("qemu-aarch64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"):
        if not shutil.which(tool):
            sys.exit(f"FAILED: {tool} is not installed (tools/scripts/install-deps.sh installs "
                     "qemu-user and the cross toolchain); the AArch64 tests cannot run")
    build = os.path.join(work, "build-aarch64")
    run(["cmake", "-S", TOP, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DKILN_RT_MAX_PAGE_SIZE=4096",
         f"-DCMAKE_TOOLCHAIN_FILE={TOP}/cmake/toolchains/aarch64-linux-gnu.cmake"])
    run(["cmake", "--build", build])
    return build


def footprint(build, work):
    """Stripped sizes of the AArch64 runtime; the goal is 64 KiB each."""
    so, ar = os.path.join(work, "rt.so"), os.path.join(work, "rt.a")
    run(["aarch64-linux-gnu-strip", "-o", so, os.path.join(build, "runtime/libkiln_rt.so")])
    shutil.copy(os.path.join(build, "runtime/libkiln_rt.a"), ar)
    run(["aarch64-linux-gnu-strip", "--strip-unneeded", ar])
    sizes = os.path.getsize(so), os.path.getsize(ar)
    ok = max(sizes) <= 65536
    print(f"libkiln_rt for aarch64, stripped: .so {sizes[0]} bytes, .a {sizes[1]} bytes "
          f"(goal 65536 each): {'ok' if ok else 'FAILED'}")
    return ok


def install_layout(build, work):
    """The cross build installs the layout of tests/install/layout.txt, less the compiler."""
    prefix = os.path.join(work, "install")
    shutil.rmtree(prefix, ignore_errors=True)
    run(["cmake", "--install", build, "--prefix", prefix])
    got = sorted(os.path.relpath(os.path.join(d, f), prefix)
                 for d, _, files in os.walk(prefix) for f in files)
    with open(os.path.join(TOP, "tests/install/layout.txt")) as f:
        want = sorted(line.split()[0] for line in f
                      if line.strip() and not line.startswith("#") and "compiler" not in line.split()[1:])
    machine = run(["readelf", "-h", os.path.join(prefix, "lib/libkiln_rt.so")])
    version = run(QEMU + [os.path.join(prefix, "bin/kiln-run"), "--version"])
    ok = got == want and "AArch64" in machine and version.startswith("kiln-run ")
    print(f"aarch64 install tree: {len(got)} files, {'the layout' if got == want else f'not the layout: {sorted(set(got) ^ set(want))}'}"
          f", installed kiln-run runs: {'ok' if ok else 'FAILED'}")
    return ok


def compare(name, x86, arm):
    a, b = np.load(arm), np.load(x86)
    rel = float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-30)) if a.shape == b.shape else float("inf")
    ok = rel <= TOLERANCE
    print(f"{name:28s} aarch64 vs x86-64: max |diff| = {rel:.2g} x max |x86|: {'ok' if ok else 'FAILED'}")
    return ok


def main():
    kilnc, kiln_run_x86, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    build = cross_build(work)
    kiln_run_arm = QEMU + [os.path.join(build, "tools/kiln-run/kiln-run")]
    results = [footprint(build, work), install_layout(build, work)]

    # The digits sample, per CPU, and its logits against x86-64.
    digits = os.path.join(TOP, "samples/digits")
    images, labels = os.path.join(digits, "test_images.npy"), os.path.join(digits, "test_labels.npy")
    one = os.path.join(work, "digit0.npy")
    np.save(one, np.load(images)[:1].reshape(1, 1, 8, 8).astype(np.float32))
    x86_pkg = os.path.join(work, "digits_x86.kiln")
    run([kilnc, "compile", os.path.join(digits, "digits.onnx"), "-o", x86_pkg])
    run([kiln_run_x86, x86_pkg, "--input", f"image={one}", "--output-dir", os.path.join(work, "digits_x86")])
    for cpu in ("generic", "cortex-a53", "cortex-a72", "neoverse-n1"):
        pkg = os.path.join(work, f"digits_{cpu}.kiln")
        run([kilnc, "compile", os.path.join(digits, "digits.onnx"), "--target", "aarch64-linux-gnu",
             "--cpu", cpu, "-o", pkg])
        out = run(QEMU + [os.path.join(build, "samples/digits"), pkg, images, labels])
        acc = [line for line in out.splitlines() if line.startswith("accuracy:")]
        ok = bool(acc) and int(acc[0].split()[1].split("/")[0]) >= 37
        print(f"digits --cpu {cpu:12s} under qemu: {acc[0] if acc else 'no accuracy line'}: {'ok' if ok else 'FAILED'}")
        run(kiln_run_arm + [pkg, "--input", f"image={one}", "--output-dir", os.path.join(work, f"digits_{cpu}")])
        ok = compare(f"digits --cpu {cpu}", os.path.join(work, "digits_x86/logits.npy"),
                     os.path.join(work, f"digits_{cpu}/logits.npy")) and ok
        results.append(ok)

    # Kernel variants: one package for a plain ARMv8 core and a dot-product one.
    fat = os.path.join(work, "digits_fat.kiln")
    run([kilnc, "compile", os.path.join(digits, "digits.onnx"), "--target", "aarch64-linux-gnu",
         "--cpu", "generic,cortex-a76", "--embed-selftest", "-o", fat])
    info = [l for l in run(kiln_run_arm + [fat, "--info"]).splitlines() if l.startswith("variant ")]
    runnable = [l.split(": ")[1].split()[0] for l in info if "(not on this CPU)" not in l]
    loaded = [l.split(": ")[1].split()[0] for l in info if "(loaded)" in l]
    ok = len(info) == 2 and bool(runnable) and loaded == runnable[-1:]
    print(f"digits --cpu generic,cortex-a76 under qemu: variants {', '.join(info)}: "
          f"{'ok' if ok else 'FAILED'}")
    results.append(ok)
    for cpu in ("generic", "cortex-a76"):
        if cpu not in runnable:
            continue
        out_dir = os.path.join(work, f"digits_fat_{cpu}")
        run(kiln_run_arm + [fat, "--variant", cpu, "--input", f"image={one}", "--output-dir", out_dir])
        results.append(compare(f"digits variant {cpu}", os.path.join(work, "digits_x86/logits.npy"),
                               os.path.join(out_dir, "logits.npy")))
    out = run(kiln_run_arm + [fat, "--selftest"])
    ok = "selftest: passed" in out
    print(f"digits two variants, --selftest under qemu: {'ok' if ok else 'FAILED: ' + out}")
    results.append(ok)

    # The static sample: the digits model linked in (--emit static-lib --embed-data), the
    # thread-free runtime, a fixed memory pool.
    sdir = os.path.join(work, "static")
    os.makedirs(sdir, exist_ok=True)
    run([kilnc, "compile", os.path.join(digits, "digits.onnx"), "--target", "aarch64-linux-gnu",
         "--emit", "static-lib", "--embed-data", "-o", os.path.join(sdir, "digits_static")])
    exe = os.path.join(sdir, "static_digits")
    run(["aarch64-linux-gnu-gcc", "-O2", "-std=c11", "-D_GNU_SOURCE", f"-I{sdir}",
         f"-I{TOP}/runtime/include", f"-I{TOP}/tools/kiln-run", f"{TOP}/samples/static/static_digits.c",
         f"{TOP}/tools/kiln-run/npy.c", os.path.join(sdir, "digits_static.a"),
         os.path.join(build, "runtime/libkiln_rt_bare.a"), "-o", exe])
    out = run(QEMU + [exe, images, labels])
    acc = [line for line in out.splitlines() if line.startswith("accuracy:")]
    ok = bool(acc) and int(acc[0].split()[1].split("/")[0]) >= 37 and "all from the static pool" in out
    print(f"static_digits (static library, no threads) under qemu: {acc[0] if acc else out.strip()}: "
          f"{'ok' if ok else 'FAILED'}")
    results.append(ok)

    # Real models.
    for name in ("resnet18", "mobilenet_v2", "efficientnet_b0"):
        export_models.export(name, work)
        d = os.path.join(work, name)
        inp = f"input={os.path.join(d, 'input.npy')}"
        x86_pkg, arm_pkg = os.path.join(d, "x86.kiln"), os.path.join(d, "aarch64.kiln")
        run([kilnc, "compile", os.path.join(d, "model.onnx"), "-o", x86_pkg])
        # The AArch64 package carries a self-test computed on this machine (the same input).
        run([kilnc, "compile", os.path.join(d, "model.onnx"), "--target", "aarch64-linux-gnu",
             "--embed-selftest", "--input", inp, "-o", arm_pkg])
        run([kiln_run_x86, x86_pkg, "--input", inp, "--output-dir", os.path.join(d, "x86_out")])
        run(kiln_run_arm + [arm_pkg, "--input", inp, "--threads", "2", "--output-dir", os.path.join(d, "arm_out")])
        results.append(compare(name, os.path.join(d, "x86_out/output.npy"), os.path.join(d, "arm_out/output.npy")))
        out = run(kiln_run_arm + [arm_pkg, "--selftest", "--threads", "2"])
        ok = "selftest: passed" in out
        print(f"{name:28s} kiln-run --selftest under qemu: {out.strip().splitlines()[-2] if ok else out.strip()}: "
              f"{'ok' if ok else 'FAILED'}")
        results.append(ok)

    # Integer kernels, exact on AArch64 too.
    import onnx
    for case in quantized_ops.dot_product_cases(np.random.default_rng(11)):
        name, _, inputs, _, want = case
        d = os.path.join(work, "int8", name)
        os.makedirs(d, exist_ok=True)
        model = quantized_ops.make_model(case)
        onnx.save(model, os.path.join(d, "model.onnx"))
        args = []
        for k, v in inputs.items():
            np.save(os.path.join(d, f"{k}.npy"), v)
            args += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
        for cpu in ("generic", "cortex-a76"):
            pkg = os.path.join(d, f"{cpu}.kiln")
            run([kilnc, "compile", os.path.join(d, "model.onnx"), "--target", "aarch64-linux-gnu",
                 "--cpu", cpu, "-o", pkg])
            out = os.path.join(d, f"{cpu}_out")
            run(kiln_run_arm + [pkg, *args, "--output-dir", out])
            got = {k: np.load(os.path.join(out, k + ".npy")) for k in want}
            problems = quantized_ops.differences(got, want)
            print(f"{name:34s} --cpu {cpu:10s} under qemu: "
                  f"{'bit for bit' if not problems else 'FAILED: ' + '; '.join(problems)}")
            results.append(not problems)

    print(f"aarch64: {sum(results)} of {len(results)} checks pass under qemu")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
