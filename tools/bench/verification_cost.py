#!/usr/bin/python3
"""What the runtime's package verification costs at load time (docs/performance.md):

    tools/bench/verification_cost.py [--build DIR] [--models resnet50,mobilenet_v2] [--rounds N]

Exports each model with seeded random weights (tests/models/export_models.py), compiles it
signed with a fresh key (kilnc keygen, kilnc compile --sign), and runs tools/bench/load_bench.c,
which times kiln_model_load_file with checksums skipped, with the default checks, with a pinned
SHA-256 and with a required signature. Prints a markdown table with the CPU that ran it. Needs
the main build (tools/scripts/test.sh or tools/bench/run_benchmarks.py builds it).
"""
import argparse
import contextlib
import hashlib
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "tests", "models"))
import export_models  # noqa: E402

MODES = ["skip_checksums", "default", "pinned", "signed"]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(TOP, "build"))
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    kilnc = os.path.join(args.build, "tools/kilnc/kilnc")
    bench = os.path.join(args.build, "tools/bench/load_bench")
    for tool in (kilnc, bench):
        if not os.path.exists(tool):
            sys.exit(f"verification_cost: {tool} is missing; build first (cmake --build {args.build})")
    work = os.path.join(args.build, "bench", "verification")
    os.makedirs(work, exist_ok=True)
    key = os.path.join(work, "bench")
    subprocess.run([kilnc, "keygen", "-o", key], check=True, stdout=subprocess.DEVNULL)
    with open(key + ".pub") as f:
        key_hex = f.read().split()[-1]
    print(f"CPU: {cpu_model()}; median of {args.rounds} loads from the page cache, load + release")
    print()
    print("| model | package bytes | " + " | ".join(f"{m} ms" for m in MODES) +
          " | signature check GB/s |")
    print("|---|---|" + "---|" * (len(MODES) + 1))
    for name in args.models.split(","):
        with contextlib.redirect_stdout(sys.stderr):  # the exporter's summary line
            export_models.export(name, work)
        pkg = os.path.join(work, name, "signed.kiln")
        subprocess.run([kilnc, "compile", os.path.join(work, name, "model.onnx"), "-o", pkg,
                        "--sign", key + ".key", "--quiet"], check=True)
        with open(pkg, "rb") as f:
            data = f.read()
        out = subprocess.run([bench, pkg, "--rounds", str(args.rounds), "--key", key_hex, "--pin",
                              hashlib.sha256(data).hexdigest()],
                             check=True, capture_output=True, text=True).stdout
        ms = {m: float(re.search(rf"^{m}_ms: ([0-9.]+)$", out, re.M).group(1)) for m in MODES}
        extra = ms["signed"] - ms["default"]
        rate = f"{len(data) / extra / 1e6:.2f}" if extra > 0 else "n/a"
        print(f"| {name} | {len(data):,} | " + " | ".join(f"{ms[m]:.2f}" for m in MODES) +
              f" | {rate} |")


if __name__ == "__main__":
    main()
