#!/usr/bin/python3
"""ONNX Runtime on its AVX2 kernels, on an AVX-512 machine (run_benchmarks.py --avx2).

ONNX Runtime's CPU kernels (MLAS) pick their instruction set once, when the library loads, from
CPUID: AVX2 kernels first, then, where CPUID reports AVX512F and the OS saves the AVX-512 state,
AVX-512 kernels in their place. There is no setting that stops at AVX2. To hold kiln's AVX2 code
(`kilnc --cpu znver3`) against ONNX Runtime's AVX2 kernels where no AVX2-only machine is at hand,
this makes a copy of the onnxruntime-node package whose libonnxruntime.so skips that AVX-512
branch: one conditional jump, after the AVX512F test of CPUID leaf 7, made unconditional. The
rest of the library (and the package it came from) is untouched.

    tools/bench/ort_avx2.py ORT_DIR OUT_DIR

ORT_DIR is the npm prefix run_benchmarks.py installs onnxruntime-node@1.30.0 into (build/ort);
OUT_DIR receives the copy (build/ort_avx2), which tools/bench/ort_bench.js and ort_profile.js
take in its place. The instruction sequence is checked byte for byte: a library of another
version, where it is not found exactly once, is refused rather than patched somewhere else.
"""
import os
import shutil
import sys

LIBRARY = os.path.join("node_modules", "onnxruntime-node", "bin", "napi-v6", "linux", "x64",
                       "libonnxruntime.so.1")

# MLAS's platform setup in onnxruntime 1.30.0 (x86-64 Linux build), after CPUID leaf 7:
#   test $0x10000,%r10d   ; EBX bit 16: AVX512F
#   je   +0x0e            ; not set: keep the AVX2 kernels      <- made `jmp +0x0e`
#   mov  %r8,%rax         ; XCR0 ...
#   not  %rax
#   test $0xe0,%al        ; ... the OS saves opmask and ZMM state
AVX512F_TEST = bytes.fromhex("41f7c200000100" "740e" "4c89c0" "48f7d0" "a8e0")
JE_OFFSET = 7
JE_SHORT, JMP_SHORT = 0x74, 0xEB


def make(ort_dir, out_dir):
    """Copies ort_dir to out_dir with MLAS's AVX-512 branch skipped; returns out_dir."""
    src = os.path.join(ort_dir, LIBRARY)
    if not os.path.isfile(src):
        raise RuntimeError(f"{src}: no ONNX Runtime x86-64 library (npm install onnxruntime-node first)")
    with open(src, "rb") as f:
        lib = bytearray(f.read())
    at = lib.find(AVX512F_TEST)
    if at < 0 or lib.find(AVX512F_TEST, at + 1) >= 0:
        raise RuntimeError(f"{src}: the AVX512F test of onnxruntime 1.30.0's MLAS setup is "
                           f"{'not there' if at < 0 else 'there more than once'}: not patching")
    assert lib[at + JE_OFFSET] == JE_SHORT
    lib[at + JE_OFFSET] = JMP_SHORT
    tmp = out_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(ort_dir, tmp, symlinks=True)
    with open(os.path.join(tmp, LIBRARY), "wb") as f:
        f.write(lib)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)  # whole or not at all
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        print(make(sys.argv[1], sys.argv[2]))
    except RuntimeError as e:
        sys.exit(f"ort_avx2: {e}")
