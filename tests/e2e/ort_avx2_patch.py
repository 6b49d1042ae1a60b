#!/usr/bin/python3
"""tools/bench/ort_avx2.py on stand-in libraries: the copy has exactly the one jump changed, the
original is untouched, and a library where the instruction sequence is missing or appears twice
is refused with nothing left behind. Prints "ort_avx2: all checks pass"."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
import ort_avx2  # noqa: E402


def prefix_with(root, body):
    lib = os.path.join(root, ort_avx2.LIBRARY)
    os.makedirs(os.path.dirname(lib))
    with open(lib, "wb") as f:
        f.write(body)
    with open(os.path.join(root, "package.json"), "w") as f:
        f.write("{}\n")
    return lib


def check(cond, what):
    if not cond:
        sys.exit(f"ort_avx2: FAILED: {what}")


with tempfile.TemporaryDirectory() as tmp:
    head, tail = os.urandom(1000).replace(b"\x41", b"\x42"), os.urandom(500).replace(b"\x41", b"\x42")
    body = head + ort_avx2.AVX512F_TEST + tail
    src = os.path.join(tmp, "ort")
    lib = prefix_with(src, body)
    out = ort_avx2.make(src, os.path.join(tmp, "ort_avx2"))
    with open(os.path.join(out, ort_avx2.LIBRARY), "rb") as f:
        patched = f.read()
    diff = [i for i in range(len(body)) if body[i] != patched[i]]
    check(len(patched) == len(body), "the copy has the library's size")
    check(diff == [len(head) + ort_avx2.JE_OFFSET], f"one byte changed, at the jump: {diff}")
    check(patched[diff[0]] == ort_avx2.JMP_SHORT, "the jump is unconditional")
    check(os.path.exists(os.path.join(out, "package.json")), "the rest of the package is copied")
    with open(lib, "rb") as f:
        check(f.read() == body, "the original library is untouched")

    for name, bad in (("missing", head + tail),
                      ("twice", head + ort_avx2.AVX512F_TEST + ort_avx2.AVX512F_TEST + tail)):
        src = os.path.join(tmp, name)
        prefix_with(src, bad)
        dst = os.path.join(tmp, name + "_avx2")
        try:
            ort_avx2.make(src, dst)
            check(False, f"a library with the sequence {name} is refused")
        except RuntimeError as e:
            check("not patching" in str(e), f"the refusal says why: {e}")
        check(not os.path.exists(dst) and not os.path.exists(dst + ".tmp"),
              f"nothing is left behind when the sequence is {name}")
print("ort_avx2: all checks pass")
