#!/usr/bin/python3
"""The command lines as users meet them: --help and --version on both tools, `kiln-run --info`
running nothing, a wrong input shape naming both shapes, `--profile` naming launches by model
nodes, and `kiln-run --trace` writing a Chrome trace whose events cover every launch, in
schedule order.

usage: cli_manners.py KILNC KILN_RUN MODEL.kg WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np

failures = []


def check(ok, what):
    print(f"{'ok' if ok else 'FAILED'}: {what}")
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    kilnc, kiln_run, model, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    pkg = os.path.join(work, "convnet.kiln")
    subprocess.run([kilnc, "compile", model, "-o", pkg, "--quiet"], check=True)

    for tool in (kilnc, kiln_run):
        name = os.path.basename(tool)
        r = run([tool, "--help"])
        check(r.returncode == 0 and "usage:" in r.stdout and "--version" in r.stdout,
              f"{name} --help exits 0 and lists --version")
        r = run([tool, "--version"])
        check(r.returncode == 0 and r.stdout.startswith(f"{name} 0.") and "format 2." in r.stdout,
              f"{name} --version: {r.stdout.strip()!r}")

    r = run([kiln_run, pkg, "--info"])
    # 11 launches: `kilnc plan` (c2's padded input is stored by p1's kernel, its border by two)
    check(r.returncode == 0 and "launches: 11" in r.stdout and "c1+r1+p1" in r.stdout
          and "c2 (border)" in r.stdout
          and "not set" not in r.stderr, "kiln-run --info prints the launches and runs nothing")

    bad = os.path.join(work, "small.npy")
    np.save(bad, np.zeros((2, 3, 30, 30), np.float32))
    r = run([kiln_run, pkg, "--input", f"image={bad}"])
    check(r.returncode == 1 and "expected [2,3,32,32], got [2,3,30,30]" in r.stderr,
          f"a wrong shape names both: {r.stderr.strip()!r}")

    trace = os.path.join(work, "trace.json")
    if os.path.exists(trace):
        os.remove(trace)
    r = run([kiln_run, pkg, "--trace", trace])  # no input: the run fails, no trace is written
    check(r.returncode == 1 and not os.path.exists(trace), "a failed run writes no trace")

    img = os.path.join(work, "image.npy")
    np.save(img, np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32))
    r = run([kiln_run, pkg, "--input", f"image={img}", "--threads", "2", "--repeat", "3",
             "--trace", trace])
    check(r.returncode == 0, f"kiln-run --trace runs ({r.stderr.strip()})")
    r = run([kiln_run, pkg, "--input", f"image={img}", "--repeat", "2", "--profile"])
    check(r.returncode == 0 and "c1+r1+p1" in r.stdout and "total_ms:" in r.stdout,
          "--profile names each launch by the model nodes it computes")
    r = run([kiln_run, pkg, "--input", f"image={img}", "--repeat", "2", "--profile", "--peak", "50"])
    total = [l for l in r.stdout.splitlines() if l.startswith("total_ms:")]
    gflop = float(total[0].split(", ")[1].split()[0]) if total else -1
    want = json.loads(run([kilnc, "inspect", pkg, "--json"]).stdout)["flops"] * 1e-9
    rows = [l.split() for l in r.stdout.splitlines()[1:] if l and l[0].isdigit()]
    check(r.returncode == 0 and want > 0 and abs(gflop - want) < 1e-3 and rows
          and any(float(row[6]) > 0 for row in rows)
          and all(row[7] != "-" for row in rows if float(row[6]) > 0),
          f"--profile --peak: GFLOP/s and peak share per launch, {gflop} GFLOP as kilnc inspect says")
    info = run([kiln_run, pkg, "--info"]).stdout
    labels = {}
    for line in info.splitlines():  # "launch 3: group 3, k6 x 1 tasks: p1+c2"
        if line.startswith("launch ") and ": group " in line:
            head, label = line.split(" tasks: ", 1)
            labels[int(head.split(":")[0].split()[1])] = (int(head.split("group ")[1].split(",")[0]),
                                                          label)
    with open(trace) as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    names = [e for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"]
    check(len(names) == 2, "thread names for the caller and the worker")
    check({e["args"]["launch"] for e in events} == set(labels), "every launch has an event")
    check(all(e["name"] == labels[e["args"]["launch"]][1] for e in events),
          "events are named by the model nodes each launch fuses")
    check(all(e["tid"] in (0, 1) and e["dur"] >= 0 and e["ts"] >= 0 for e in events),
          "events sit on the two threads with sane times")
    check(all(e["args"]["group"] == labels[e["args"]["launch"]][0] for e in events),
          "each event carries its launch's group")
    span = {}
    for e in events:
        g = e["args"]["group"]
        lo, hi = span.get(g, (float("inf"), 0.0))
        span[g] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
    order = sorted(span)
    check(all(span[a][1] <= span[b][0] + 1e-3 for a, b in zip(order, order[1:])),
          "each group starts after the one before it ends")

    # A package of kernel variants: kilnc says what each requires, kiln-run lists and picks them.
    cpus = ["generic", "cortex-a76"] if os.uname().machine == "aarch64" else ["x86-64-v2", "x86-64-v3"]
    fat = os.path.join(work, "fat.kiln")
    r = run([kilnc, "compile", model, "-o", fat, "--cpu", ",".join(cpus)])
    check(r.returncode == 0 and all(f"CPU {c} (a variant): the package requires" in r.stderr
                                    for c in cpus),
          "kilnc --cpu A,B prints the features each variant requires")
    r = run([kilnc, "compile", model, "-o", os.path.join(work, "host.kiln")])
    check(r.returncode == 0 and "the package requires" in r.stderr,
          "kilnc prints the features a host package requires")
    info = run([kiln_run, fat, "--info"]).stdout
    lines = [l for l in info.splitlines() if l.startswith("variant ")]
    check(len(lines) == 2 and sum("(loaded)" in l for l in lines) == 1,
          f"kiln-run --info lists the variants, one loaded: {lines}")
    r = run([kiln_run, fat, "--variant", cpus[0], "--input", f"image={img}", "--output-dir",
             os.path.join(work, "v0")])
    check(r.returncode == 0 and os.path.exists(os.path.join(work, "v0", "probs.npy")),
          f"kiln-run --variant {cpus[0]} runs that variant")
    r = run([kiln_run, fat, "--variant", "pentium", "--info"])
    check(r.returncode == 1 and "no variant 'pentium'" in r.stderr,
          f"an unknown variant is an error naming it: {r.stderr.strip()!r}")

    print(f"cli manners: {'all checks pass' if not failures else f'{len(failures)} FAILED'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
