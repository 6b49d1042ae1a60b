#!/usr/bin/python3
"""Signed packages end to end: kilnc keygen, kilnc compile --sign, kiln-run --trust runs the
signed package and gives the unsigned package's outputs; under --trust an unsigned package, one
signed by another key and one with a flipped byte are refused with KILN_SIGNATURE_INVALID;
kilnc inspect names the signer.

usage: signed_packages.py KILNC KILN_RUN MODEL.kg WORKDIR
"""
import os
import subprocess
import sys

import numpy as np

kilnc, kiln_run, model, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
p = lambda name: os.path.join(work, name)


def run(cmd, ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if ok and r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


run([kilnc, "keygen", "-o", p("k")])
run([kilnc, "keygen", "-o", p("other")])
assert oct(os.stat(p("k.key")).st_mode & 0o777) == "0o600", "the secret key is readable by others"
run([kilnc, "compile", model, "-o", p("signed.kiln"), "--sign", p("k.key")])
run([kilnc, "compile", model, "-o", p("plain.kiln")])
inspect = run([kilnc, "inspect", p("signed.kiln")]).stdout
pub = open(p("k.pub")).read().split()[1]
assert f"signed by {pub}: valid" in inspect, inspect
assert "signature: none" in run([kilnc, "inspect", p("plain.kiln")]).stdout

x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
np.save(p("x.npy"), x)
run([kiln_run, p("signed.kiln"), "--trust", p("k.pub"), "--input", "image=" + p("x.npy"),
     "--output-dir", p("out_signed")])
run([kiln_run, p("plain.kiln"), "--input", "image=" + p("x.npy"), "--output-dir", p("out_plain")])
for name in ("probs", "features"):
    a, b = np.load(p(f"out_signed/{name}.npy")), np.load(p(f"out_plain/{name}.npy"))
    assert np.array_equal(a, b), name
print("kiln-run --trust k.pub signed.kiln: ran, outputs equal to the unsigned package's")

data = bytearray(open(p("signed.kiln"), "rb").read())
for where in (200, len(data) // 2, len(data) - 100):  # metadata, weights, the end
    bad = bytearray(data)
    bad[where] ^= 0x10
    open(p("flipped.kiln"), "wb").write(bad)
    r = run([kiln_run, p("flipped.kiln"), "--trust", p("k.pub"), "--info"], ok=False)
    assert r.returncode == 1 and "KILN_SIGNATURE_INVALID" in r.stderr, (where, r.stderr)
print("a flipped byte (metadata, weights, end): KILN_SIGNATURE_INVALID")
for pkg, key, why in (("plain.kiln", "k.pub", "not signed"), ("signed.kiln", "other.pub", "does not trust")):
    r = run([kiln_run, p(pkg), "--trust", p(key), "--info"], ok=False)
    assert r.returncode == 1 and "KILN_SIGNATURE_INVALID" in r.stderr and why in r.stderr, r.stderr
print("unsigned, or signed by an untrusted key: KILN_SIGNATURE_INVALID")
print("signed packages: all checks pass")
