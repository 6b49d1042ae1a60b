#!/usr/bin/python3
"""kiln against ONNX Runtime on this machine, in one command (see docs/performance.md):

    tools/bench/run_benchmarks.py [--quick] [--models a,b] [--write-docs]
    tools/bench/run_benchmarks.py --variants [--quick] [--models a,b] [--write-docs]

Builds Release (tools/scripts/install-deps.sh first), exports the benchmark models with seeded
random weights (tests/models/export_models.py), installs onnxruntime-node@1.30.0 with
`npm install --ignore-scripts` into the build tree, then for each model and for 1 and 2 threads
runs kiln (`kiln-run --repeat`; at 2 threads the package `kilnc compile --threads 2` makes, as
an application that runs 2-thread sessions would ship) and ONNX Runtime
(tools/bench/ort_bench.js) alternately, with
warm-up, and reports the machine (CPU model and vector ISA; docs/performance.md keeps one section per
machine), latencies (the best of each round's repeats, median over rounds) and the
ratio kiln/ORT. Outputs of both runtimes are
compared in the same run. It also measures the FMA peak (tools/bench/fma_peak.c), GEMM kernels
in GFLOP/s and as a fraction of that peak, each runtime's load-to-ready time and peak resident
memory, and around each model's 2-thread rounds where the host has placed the two vCPUs: the
round trip of a cache line between them (tools/bench/cross_core_read.c) and the FMA peak per
core with both busy as a share of the single-core peak (tools/bench/fma_peak.c --pair: ~50% when
the vCPUs are two hardware threads of one core). The markdown
table is printed, and with --write-docs written to docs/performance.md.

A model named BASE_qdq (resnet18_qdq, mobilenet_v2_qdq) is BASE made int8 by
tools/scripts/quantize.py (QDQ form, calibrated on 4 seeded random inputs); BASE_dyn
(transformer_dyn) by quantize.py --dynamic (DynamicQuantizeLinear + MatMulInteger, the form ONNX
Runtime's dynamic quantizer emits). Both runtimes run the same int8 model. Its outputs agree when
the largest difference is within 2% of the largest output (and, for classifiers, the top-1 class
is the same): both compute the integer contractions exactly, but round the float parts (the
requantization scale, the dequantized epilogue) at different points, and a value that rounds the
other way moves by one quantization step. Where ORT's int8 output is itself far from fp32 (its
AVX2 kernels without VNNI saturate int16 pair sums), kiln's output agrees when it is within 2% of
the fp32 BASE's output and nearer to it than ORT's; the int8 table shows both distances. A second table sets each int8 model beside its fp32
BASE: kiln's speedup and package size.

--wider measures a wider set of torchvision architectures (WIDER_MODELS: DenseNet, GoogLeNet,
RegNet, ResNeXt, ConvNeXt, MnasNet, ShuffleNet, MobileNetV3), any of which --models can also
name, with seeded random weights as the others; its table (no GEMMs) is a section of its own.

--avx2 (on an x86-64 machine with AVX-512) holds AVX2 code against AVX2 code: kiln's packages
compiled for an AVX2 CPU (kilnc --cpu znver3, an AMD Zen 3: 16 vector registers, 512 KiB of L2)
against ONNX Runtime's AVX2 kernels, which tools/bench/ort_avx2.py makes it load in place of its
AVX-512 ones; GEMMs against the FMA peak of 256-bit FMAs (fma_peak_avx2). Its table is a section
of its own in docs/performance.md. It stands in for an AVX2 machine, not for its caches and
clocks. By default it runs the six fp32 models of the performance goal.

--variants measures packages of kernel variants instead (kilnc --cpu x86-64-v2,x86-64-v3,x86-64-v4,
or generic,cortex-a76 on AArch64): per model the fat package against the single-target package of
the variant the runtime chose on this machine, run alternately: latency ratio, load-to-ready time
and file size overhead.
"""
import argparse
import collections
import datetime
import functools
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "models"))
sys.path.insert(0, os.path.join(TOP, "tools", "bench"))
import export_models  # noqa: E402
import ort_avx2  # noqa: E402

MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "resnet50", "efficientnet_b0", "transformer",
          "lstm_classifier", "gru_tagger", "unet", "resnet18_qdq", "mobilenet_v2_qdq",
          "transformer_dyn"]
INT8_SUFFIXES = ("_qdq", "_dyn")
GOAL_MODELS = MODELS[:6]  # the fp32 models of the performance goal (--avx2's default)
# --wider: more torchvision architectures (dense, inception, RegNet, ResNeXt, ConvNeXt, NAS-found,
# MobileNetV3 with squeeze-excitation and hard-swish), exported as the others are.
WIDER_MODELS = ["densenet121", "googlenet", "regnet_x_1_6gf", "regnet_y_400mf", "resnext50_32x4d",
                "convnext_tiny", "mnasnet1_0", "shufflenet_v2_x1_0", "mobilenet_v3_large",
                "mobilenet_v3_small"]
AVX2_CPU = "znver3"

# kilnc and kiln-run, the ONNX Runtime npm prefix, and kilnc's target arguments (--cpu ...).
Tools = collections.namedtuple("Tools", "kilnc kiln_run ort_dir cpu_args")


def base_of(name):
    for s in INT8_SUFFIXES:
        if name.endswith(s):
            return name[:-len(s)]
    return None


def input_name_of(model):
    import onnx
    return onnx.load(model, load_external_data=False).graph.input[0].name
GEMMS = [(1024, 1024, 1024), (128, 768, 768), (128, 3072, 768), (3136, 64, 576)]  # M, N, K


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def timed(cmd):
    """Runs cmd under GNU time; returns (stdout, peak RSS in MiB)."""
    r = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kb: %M"] + cmd, check=True,
                       capture_output=True, text=True)
    rss = int(re.search(r"peak_rss_kb: (\d+)", r.stderr).group(1)) / 1024.0
    return r.stdout, rss


def field(text, key):
    m = re.search(key + r":\s*(?:min=[\d.]+ median=)?([\d.]+)", text)
    if not m:
        raise RuntimeError(f"no {key} in:\n{text}")
    return float(m.group(1))


def best_latency(text):
    """The fastest of a run's repeats: on this shared virtual machine, slow outliers come from
    the host (steal), not from the runtime, and the minimum is the stable statistic."""
    m = re.search(r"latency_ms:\s*min=([\d.]+)", text)
    if not m:
        raise RuntimeError(f"no latency_ms min= in:\n{text}")
    return float(m.group(1))


def build(build_dir, avx2=False):
    sh([os.path.join(TOP, "tools/scripts/install-deps.sh")])
    sh(["cmake", "-S", TOP, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
    sh(["cmake", "--build", build_dir, "--target", "kilnc", "kiln-run", "fma_peak",
        "cross_core_read"] + (["fma_peak_avx2"] if avx2 else []))


def install_ort(build_dir):
    if not shutil.which("npm"):  # Debian's nodejs comes without npm
        sh(["apt-get", "install", "-y", "-q", "--no-install-recommends", "npm"])
    ort_dir = os.path.join(build_dir, "ort")
    if not os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node")):
        os.makedirs(ort_dir, exist_ok=True)
        sh(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
            "onnxruntime-node@1.30.0"], cwd=ort_dir)
    return ort_dir


def export_qdq(name, tools, work):
    """BASE_qdq: BASE exported, then quantized by tools/scripts/quantize.py."""
    kilnc, kiln_run = tools.kilnc, tools.kiln_run
    base = name[:-len("_qdq")]
    export_models.export(base, work)
    src, d = os.path.join(work, base), os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    x = np.load(os.path.join(src, "input.npy"))
    cal = []
    for i in range(4):
        cal.append(os.path.join(d, f"calibration{i}.npy"))
        np.save(cal[-1], np.random.default_rng(100 + i).standard_normal(x.shape).astype(x.dtype))
    sh([sys.executable, os.path.join(TOP, "tools/scripts/quantize.py"), os.path.join(src, "model.onnx"),
        os.path.join(d, "model.onnx"), "--calibration", *cal, "--kilnc", kilnc, "--kiln-run", kiln_run])
    shutil.copy(os.path.join(src, "input.npy"), os.path.join(d, "input.npy"))


def export_dynamic(name, work):
    """BASE_dyn: BASE exported, then quantized by tools/scripts/quantize.py --dynamic."""
    base = base_of(name)
    export_models.export(base, work)
    src, d = os.path.join(work, base), os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    sh([sys.executable, os.path.join(TOP, "tools/scripts/quantize.py"), os.path.join(src, "model.onnx"),
        os.path.join(d, "model.onnx"), "--dynamic"])
    shutil.copy(os.path.join(src, "input.npy"), os.path.join(d, "input.npy"))


def core_round_trip(build_dir):
    """The round trip of a cache line between CPUs 0 and 1 (tools/bench/cross_core_read.c), in
    ns. On a virtual machine it depends on where the host places the vCPUs, and 2-thread
    latencies move with it, so each row reports what its 2-thread rounds saw."""
    tool = os.path.join(build_dir, "tools/bench/cross_core_read")
    try:
        return field(sh([tool, "64"]), "round_trip_ns")
    except subprocess.CalledProcessError:  # one CPU: no round trip to report
        return None


def pair_fma_share(build_dir, single_peak):
    """The FMA peak per core with CPUs 0 and 1 both busy, as a share of the single-core peak
    (tools/bench/fma_peak.c --pair): ~1 where the vCPUs are cores of their own, ~0.5 where the
    host runs them on the two hardware threads of one core (a second thread then cannot speed up
    compute-bound kernels). None on one CPU."""
    try:
        both = field(sh([os.path.join(build_dir, "tools/bench/fma_peak"), "--pair"]),
                     "fma_peak_gflops_per_core_both_busy")
    except subprocess.CalledProcessError:
        return None
    return min(1.0, both / single_peak)


def placement(build_dir, single_peak):
    """Where the host has the two vCPUs now: (cache-line round trip ns, pair FMA share)."""
    return core_round_trip(build_dir), pair_fma_share(build_dir, single_peak)


# The round trip that separates the host's two placements of the vCPUs on two cores: ~100-260 ns
# (near) and ~550-1060 ns (far) on the AMD EPYC hosts so far; and the both-busy FMA share below
# which they are the two hardware threads of one core (~50%; docs/performance.md).
FAR_ROUND_TRIP_NS = 350
ONE_CORE_FMA_SHARE = 0.75
PLACEMENTS = ("near", "far", "one core")


def placement_kind(trip):
    ns, share = trip
    if ns is None:
        return None
    if share is not None and share < ONE_CORE_FMA_SHARE:
        return "one core"
    return "far" if ns >= FAR_ROUND_TRIP_NS else "near"


def by_placement(kiln_ms, ort_ms, trips):
    """kiln/ORT (the median of the rounds' ratios) over the 2-thread rounds whose placements
    before and after (trips[i], trips[i + 1]) are both near, both far, both one core: {"near":
    (ratio, rounds), ...}. The host moves the vCPUs within a run and kiln's 2-thread latency
    moves with them more than ORT's, so one median over every kind of round hides which one a
    ratio measured."""
    out = {}
    for kind in PLACEMENTS:
        rounds = [i for i in range(len(kiln_ms))
                  if all(placement_kind(t) == kind for t in trips[i:i + 2])]
        if rounds:
            out[kind] = (statistics.median(kiln_ms[i] / ort_ms[i] for i in rounds), len(rounds))
    return out


def bench_model(name, tools, work, rounds, repeat, vcpus=None):
    kilnc, kiln_run, ort_dir, cpu = tools
    if name.endswith("_qdq"):
        export_qdq(name, tools, work)
    elif name.endswith("_dyn"):
        export_dynamic(name, work)
    else:
        export_models.export(name, work)
    d = os.path.join(work, name)
    tag = f"_{cpu[1]}" if cpu else ""  # packages for another CPU beside the host's
    model, pkg = os.path.join(d, "model.onnx"), os.path.join(d, f"model{tag}.kiln")
    input_name = input_name_of(model)
    inp = os.path.join(d, "input.npy")
    t0 = time.monotonic()
    sh([kilnc, "compile", model, "-o", pkg, *cpu])
    compile_s = time.monotonic() - t0
    # The 2-thread rounds run the package compiled for 2 threads (kilnc --threads 2: Winograd
    # where its GEMMs, divided between the threads, still pay for its transforms).
    pkgs = {1: pkg, 2: os.path.join(d, f"model{tag}_t2.kiln")}
    sh([kilnc, "compile", model, "-o", pkgs[2], "--threads", "2", "--quiet", *cpu])
    row = {"model": name, "compile_s": compile_s, "package_bytes": os.path.getsize(pkg)}
    for threads in (1, 2):
        kiln_ms, ort_ms, kiln_rss, ort_rss, ready, session = [], [], [], [], [], []
        trips = [vcpus()] if vcpus and threads == 2 else []
        for _ in range(rounds):  # alternate, so drift in machine speed hits both
            out, rss = timed([kiln_run, pkgs[threads], "--input", f"{input_name}={inp}",
                              "--threads", str(threads), "--repeat", str(repeat), "--output-dir",
                              os.path.join(d, f"kiln_out_{threads}")])
            kiln_ms.append(best_latency(out))
            ready.append(field(out, "ready_ms"))
            kiln_rss.append(rss)
            out, rss = timed(["node", os.path.join(TOP, "tools/bench/ort_bench.js"), ort_dir, model,
                              str(threads), str(repeat), os.path.join(d, "ort_out.npy"),
                              f"{input_name}={inp}"])
            ort_ms.append(best_latency(out))
            session.append(field(out, "session_ms"))
            ort_rss.append(rss)
            if trips:
                trips.append(vcpus())
        ns = [t[0] for t in trips if t[0] is not None]
        if ns:
            row["round_trip_ns"] = (min(ns), max(ns))
        if len(trips) > 1:
            row["by_placement"] = by_placement(kiln_ms, ort_ms, trips)
        shares = [t[1] for t in trips if t[1] is not None]
        if shares:
            row["pair_fma"] = (min(shares), max(shares))
        row[f"kiln_{threads}"] = statistics.median(kiln_ms)
        row[f"ort_{threads}"] = statistics.median(ort_ms)
        # The ratio per round (kiln and ORT seconds apart), then the median: the medians of the
        # two latencies may come from rounds the host ran differently (the vCPUs near for one,
        # far for the other).
        row[f"ratio_{threads}"] = statistics.median(k / o for k, o in zip(kiln_ms, ort_ms))
        if threads == 1:
            row["kiln_ready_ms"] = statistics.median(ready)
            row["ort_session_ms"] = statistics.median(session)
            row["kiln_rss"] = max(kiln_rss)
            row["ort_rss"] = max(ort_rss)
    o = np.load(os.path.join(d, "ort_out.npy"))
    agree = [outputs_agree(name, np.load(os.path.join(d, f"kiln_out_{t}", "output.npy")), o, work)
             for t in (1, 2)]
    row.update(max(agree, key=lambda a: a["max_rel_diff"]))  # the package further from ORT's
    row["outputs_agree"] = all(a["outputs_agree"] for a in agree)
    return row


def outputs_agree(name, k, o, work):
    """Whether kiln's output k agrees with ORT's o (see the module docstring), with the numbers."""
    row = {"max_rel_diff": float(np.abs(k - o).max() / max(np.abs(o).max(), 1e-30))}
    if base_of(name):
        # An int8 model is also held against its fp32 BASE on the same input (BASE runs first):
        # ONNX Runtime's AVX2 kernels without VNNI multiply uint8 x int8 with vpmaddubsw, whose
        # int16 pair sums saturate, so there ORT's int8 output is the one far from fp32.
        close = k.shape == o.shape and row["max_rel_diff"] <= 0.02
        ref = o  # the output the top-1 class is compared with
        fp32_path = os.path.join(work, base_of(name), "ort_out.npy")
        if os.path.exists(fp32_path):
            f = np.load(fp32_path)
            scale = max(np.abs(f).max(), 1e-30)
            row["kiln_vs_fp32"] = float(np.abs(k - f).max() / scale)
            row["ort_vs_fp32"] = float(np.abs(o - f).max() / scale)
            if not close and k.shape == f.shape and row["kiln_vs_fp32"] <= 0.02 and \
                    row["kiln_vs_fp32"] < row["ort_vs_fp32"]:
                close, ref = True, f
        top1 = int(k.argmax()) == int(ref.argmax()) if name.endswith("_qdq") else True
        row["outputs_agree"] = close and top1
    else:
        row["outputs_agree"] = k.shape == o.shape and row["max_rel_diff"] <= 1e-3
    return row


def bench_gemm(m, n, k, tools, work, repeat, peak):
    kilnc, kiln_run, cpu = tools.kilnc, tools.kiln_run, tools.cpu_args
    d = os.path.join(work, f"gemm_{m}x{n}x{k}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "gemm.kg"), "w") as f:
        # B is a weight, as in a layer (kiln packs constant B at compile time).
        f.write(f"input a: float32[{m}, {k}]\nweight b: float32[{k}, {n}] = npy(\"b.npy\")\n"
                "y = matmul(a, b)\noutput y\n")
    rng = np.random.default_rng(0)
    np.save(os.path.join(d, "a.npy"), rng.standard_normal((m, k), dtype=np.float32))
    np.save(os.path.join(d, "b.npy"), rng.standard_normal((k, n), dtype=np.float32))
    pkg = os.path.join(d, "gemm.kiln")
    sh([kilnc, "compile", os.path.join(d, "gemm.kg"), "-o", pkg, *cpu])
    out = sh([kiln_run, pkg, "--input", f"a={d}/a.npy", "--threads", "1",
              "--repeat", str(repeat), "--output-dir", d])
    got = np.load(os.path.join(d, "y.npy"))
    want = np.load(os.path.join(d, "a.npy")) @ np.load(os.path.join(d, "b.npy"))
    ok = np.abs(got - want).max() <= 1e-3 * np.abs(want).max()
    ms = best_latency(out)  # as the FMA peak: the best of the runs
    gflops = 2.0 * m * n * k / (ms * 1e-3) * 1e-9
    return {"shape": f"{m}×{n}×{k}", "ms": ms, "gflops": gflops, "peak_frac": gflops / peak, "ok": ok}


def fleet():
    return "generic,cortex-a76" if os.uname().machine == "aarch64" else "x86-64-v2,x86-64-v3,x86-64-v4"


def bench_variants(name, tools, work, rounds, repeat):
    """The fat package against the single-target package of the variant it loads here."""
    kilnc, kiln_run = tools.kilnc, tools.kiln_run
    export_models.export(name, work)
    d = os.path.join(work, name)
    model, inp = os.path.join(d, "model.onnx"), os.path.join(d, "input.npy")
    input_name = input_name_of(model)
    fat, single = os.path.join(d, "fleet.kiln"), os.path.join(d, "chosen.kiln")
    sh([kilnc, "compile", model, "--cpu", fleet(), "-o", fat, "--quiet"])
    info = sh([kiln_run, fat, "--info"])
    chosen = [l.split(": ")[1].split()[0] for l in info.splitlines()
              if l.startswith("variant ") and "(loaded)" in l][0]
    sh([kilnc, "compile", model, "--cpu", chosen, "-o", single, "--quiet"])
    row = {"model": name, "chosen": chosen, "fat_bytes": os.path.getsize(fat),
           "single_bytes": os.path.getsize(single)}
    for threads in (1, 2):
        ms = {fat: [], single: []}
        ready = {fat: [], single: []}
        for _ in range(rounds):
            for pkg in (fat, single):
                out = sh([kiln_run, pkg, "--input", f"{input_name}={inp}", "--threads", str(threads),
                          "--repeat", str(repeat), "--output-dir", os.path.join(d, "variant_out")])
                ms[pkg].append(best_latency(out))
                ready[pkg].append(field(out, "ready_ms"))
        row[f"fat_{threads}"] = statistics.median(ms[fat])
        row[f"single_{threads}"] = statistics.median(ms[single])
        if threads == 1:
            row["fat_ready"] = statistics.median(ready[fat])
            row["single_ready"] = statistics.median(ready[single])
    return row


def variants_table(rows, quick):
    commit = sh(["git", "-C", TOP, "rev-parse", "--short", "HEAD"]).strip()
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()} ({os.cpu_count()} cores), "
        f"commit {commit}{' (--quick)' if quick else ''}, by `tools/bench/run_benchmarks.py --variants`: "
        f"`--cpu {fleet()}` against the single-target package of the variant loaded here.",
        "",
        "| model | variant loaded | fat/single 1T | fat/single 2T | ready ms fat / single | fat bytes | single bytes | size overhead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        over = r["fat_bytes"] - r["single_bytes"]
        lines.append(
            f"| {r['model']} | {r['chosen']} | **{r['fat_1'] / r['single_1']:.2f}** | "
            f"**{r['fat_2'] / r['single_2']:.2f}** | {r['fat_ready']:.1f} / {r['single_ready']:.1f} | "
            f"{r['fat_bytes']:,} | {r['single_bytes']:,} | {over:,} ({100 * over / r['single_bytes']:.2f}%) |")
    return "\n".join(lines) + "\n"


def write_docs(md, begin, end, per_machine=None):
    """Replaces the text between the markers; per_machine (a machine's name): only that
    machine's section in it (<!-- machine: NAME --> ... <!-- /machine -->), appended when it
    has none yet."""
    path = os.path.join(TOP, "docs", "performance.md")
    with open(path) as f:
        doc = f.read()
    if per_machine:
        start, stop = f"<!-- machine: {per_machine} -->", "<!-- /machine -->"
        section = f"{start}\n{md}{stop}\n"
        inner = doc[doc.index(begin) + len(begin):doc.index(end)]
        if start in inner:
            a = inner.index(start)
            inner = inner[:a] + section + inner[inner.index(stop, a) + len(stop) + 1:]
        else:
            inner = inner + section
        md = inner.lstrip("\n")
    doc = doc[:doc.index(begin) + len(begin)] + "\n" + md + doc[doc.index(end):]
    with open(path, "w") as f:
        f.write(doc)
    print(f"wrote {path}", file=sys.stderr)


def isa():
    """The vector ISA kiln's heuristics see here, from the kernel's CPU flags."""
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith(("flags", "Features"))), [])
    if "avx512f" in flags:
        extra = [x for x in ("avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni") if x in flags]
        return "AVX-512" + (f" ({', '.join(extra)})" if extra else "")
    if "avx2" in flags:
        return "AVX2" + (" (avx_vnni)" if "avx_vnni" in flags else "")
    if "asimd" in flags:
        return "NEON" + (" (dotprod)" if "asimddp" in flags else "")
    return "SSE"


def machine(avx2=False):
    """The name of this machine's section of the table (--avx2: a section of its own)."""
    return f"{cpu_model()}, {isa()}" + (f", as AVX2 code (kilnc --cpu {AVX2_CPU})" if avx2 else "")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def round_trips(row):
    if "round_trip_ns" not in row:
        return "-"
    lo, hi = row["round_trip_ns"]
    text = f"{lo:.0f}" if hi - lo < 50 else f"{lo:.0f}–{hi:.0f}"
    if "pair_fma" in row:
        lo, hi = row["pair_fma"]
        text += f", {100 * lo:.0f}%" if hi - lo < 0.05 else f", {100 * lo:.0f}–{100 * hi:.0f}%"
    return text


def placement_ratios(row):
    """The 2-thread ratio per placement (near, far, one core), with its round count."""
    kinds = row.get("by_placement", {})
    return " · ".join(f"{kind} {kinds[kind][0]:.2f} ({kinds[kind][1]})" for kind in PLACEMENTS
                      if kind in kinds) or "-"


def table(rows, gemms, peak, quick, avx2=False):
    commit = sh(["git", "-C", TOP, "rev-parse", "--short", "HEAD"]).strip()
    lines = [
        f"### {machine(avx2)}",
        "",
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()} ({isa()}, {os.cpu_count()} cores), "
        f"commit {commit}{' (--quick)' if quick else ''}, by `tools/bench/run_benchmarks.py{' --avx2' if avx2 else ''}`.",
    ]
    if avx2:
        lines.append(f"AVX2 code on this machine: kiln's packages compiled with `--cpu {AVX2_CPU}`, "
                     "ONNX Runtime on its AVX2 kernels (`tools/bench/ort_avx2.py`). FMA peak of "
                     f"256-bit FMAs measured by `fma_peak_avx2`: **{peak:.1f} GFLOP/s per core** (fp32).")
    else:
        lines.append(f"FMA peak measured by `fma_peak`: **{peak:.1f} GFLOP/s per core** (fp32).")
    lines += [
        "The 1T columns run the package `kilnc compile` makes by default, the 2T columns the one "
        "`kilnc compile --threads 2` makes (outputs of both are compared with ORT's).",
        "",
        "| model | kiln 1T ms | ORT 1T ms | kiln/ORT 1T | kiln 2T ms | ORT 2T ms | kiln/ORT 2T | kiln 1T/2T | kiln ready ms | ORT session ms | kiln RSS MiB | ORT RSS MiB | outputs agree (max rel diff) | compile s | 2T vCPUs: round trip ns, FMA both busy | kiln/ORT 2T by placement (rounds) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['kiln_1']:.2f} | {r['ort_1']:.2f} | **{r['ratio_1']:.2f}** | "
            f"{r['kiln_2']:.2f} | {r['ort_2']:.2f} | **{r['ratio_2']:.2f}** | "
            f"{r['kiln_1'] / r['kiln_2']:.2f}× | {r['kiln_ready_ms']:.1f} | {r['ort_session_ms']:.1f} | "
            f"{r['kiln_rss']:.0f} | {r['ort_rss']:.0f} | {'yes' if r['outputs_agree'] else 'NO'} "
            f"({r['max_rel_diff']:.1e}) | {r['compile_s']:.1f} | {round_trips(r)} | {placement_ratios(r)} |")
    by_name = {r["model"]: r for r in rows}
    int8 = [r for r in rows if base_of(r["model"]) in by_name]
    if int8:
        lines += ["", "| int8 model | fp32 kiln 1T ms | int8 kiln 1T ms | speedup 1T | speedup 2T | "
                  "package int8/fp32 | kiln int8 vs fp32 | ORT int8 vs fp32 |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in int8:
            b = by_name[base_of(r["model"])]
            lines.append(f"| {r['model']} | {b['kiln_1']:.2f} | {r['kiln_1']:.2f} | "
                         f"**{b['kiln_1'] / r['kiln_1']:.2f}×** | **{b['kiln_2'] / r['kiln_2']:.2f}×** | "
                         f"{100 * r['package_bytes'] / b['package_bytes']:.0f}% | "
                         f"{r.get('kiln_vs_fp32', float('nan')):.1e} | {r.get('ort_vs_fp32', float('nan')):.1e} |")
    if gemms:
        lines += ["", "| GEMM M×N×K (1 thread) | ms | GFLOP/s | of FMA peak | correct |",
                  "|---|---|---|---|---|"]
    for g in gemms:
        lines.append(f"| {g['shape']} | {g['ms']:.2f} | {g['gflops']:.1f} | {100 * g['peak_frac']:.0f}% | "
                     f"{'yes' if g['ok'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--quick", action="store_true", help="fewer rounds and repeats")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds per model and thread count (default 5): more rounds see more of "
                         "the host's placements of the vCPUs (the last column)")
    ap.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    ap.add_argument("--variants", action="store_true",
                    help="packages of kernel variants against single-target packages")
    ap.add_argument("--wider", action="store_true",
                    help="the wider set of torchvision models, a table of its own (no GEMMs)")
    ap.add_argument("--avx2", action="store_true",
                    help="on an AVX-512 machine: kiln's AVX2 code against ONNX Runtime's AVX2 kernels")
    a = ap.parse_args()
    if a.avx2 and not isa().startswith("AVX-512"):
        sys.exit(f"--avx2 runs AVX2 code on an AVX-512 machine; this one is {isa()}: run without it")
    if a.avx2 and "--models" not in sys.argv:
        a.models = ",".join(GOAL_MODELS)
    if a.wider and "--models" not in sys.argv:
        a.models = ",".join(WIDER_MODELS)
    build(a.build, a.avx2)
    if a.variants:
        tools = Tools(os.path.join(a.build, "tools/kilnc/kilnc"),
                      os.path.join(a.build, "tools/kiln-run/kiln-run"), None, ())
        rounds, repeat = (1, 10) if a.quick else (5, 20)
        rows = []
        for name in a.models.split(","):
            print(f"variants of {name} ...", file=sys.stderr, flush=True)
            rows.append(bench_variants(name, tools, os.path.join(a.build, "bench"), rounds, repeat))
        md = variants_table(rows, a.quick)
        print(md)
        if a.write_docs:
            write_docs(md, "<!-- variants:begin -->", "<!-- variants:end -->")
        return
    ort_dir = install_ort(a.build)
    if a.avx2:
        ort_dir = ort_avx2.make(ort_dir, os.path.join(a.build, "ort_avx2"))
    tools = Tools(os.path.join(a.build, "tools/kilnc/kilnc"),
                  os.path.join(a.build, "tools/kiln-run/kiln-run"), ort_dir,
                  ("--cpu", AVX2_CPU) if a.avx2 else ())
    work = os.path.join(a.build, "bench")
    rounds, repeat = (1, 10) if a.quick else (a.rounds, 30)
    # The peak is measured next to each GEMM as well and the highest value kept: on a shared
    # (virtual) machine one measurement can land in a slow phase and report GEMMs above "peak".
    def measure_peak(tool="fma_peak"):
        return field(sh([os.path.join(a.build, "tools/bench", tool)]), "fma_peak_gflops_per_core")
    peak = measure_peak()
    rows = []
    for name in a.models.split(","):
        print(f"benchmarking {name} ...", file=sys.stderr, flush=True)
        rows.append(bench_model(name, tools, work, rounds, repeat,
                                lambda: placement(a.build, peak)))
    if a.avx2:  # the GEMMs run AVX2 code: against the peak of 256-bit FMAs
        measure_peak = functools.partial(measure_peak, "fma_peak_avx2")
        peak = measure_peak()
    gemms = []
    for (m, n, k) in ([] if a.wider else GEMMS):
        peak = max(peak, measure_peak())
        gemms.append(bench_gemm(m, n, k, tools, work, 5 if a.quick else 20, peak))
    peak = max(peak, measure_peak())
    for g in gemms:
        g["peak_frac"] = g["gflops"] / peak
    md = table(rows, gemms, peak, a.quick, a.avx2)
    print(md)
    if a.write_docs and a.wider:
        write_docs(md, "<!-- wider:begin -->", "<!-- wider:end -->", per_machine=machine(a.avx2))
    elif a.write_docs:
        write_docs(md, "<!-- bench:begin -->", "<!-- bench:end -->", per_machine=machine(a.avx2))
    if not all(r["outputs_agree"] for r in rows) or not all(g["ok"] for g in gemms):
        sys.exit("kiln and the reference disagree: see the table")


if __name__ == "__main__":
    main()
