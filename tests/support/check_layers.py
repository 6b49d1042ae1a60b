#!/usr/bin/python3
"""The layering of docs/architecture.md, checked on the sources: each compiler folder includes
only the folders below it; the runtime includes no compiler header; compiler and runtime share
schema/kiln_abi.h; one file in compiler/ makes an LLVM TargetMachine.

usage: check_layers.py REPO_ROOT
"""
import os
import re
import sys

top = sys.argv[1]
# folder -> the compiler folders its files may include (besides its own)
ALLOWED = {
    "support": set(),
    "target": {"support"},
    "ir": {"support"},
    "tensor": {"support", "ir"},
    "frontend": {"support", "ir", "tensor"},
    "schedule": {"support", "ir", "tensor"},
    "opt": {"support", "ir", "tensor", "schedule", "target"},
    "codegen": {"support", "ir", "tensor", "schedule", "opt", "target"},
    "jit": {"support", "ir", "tensor", "schedule", "opt", "target", "codegen"},
    "package": {"support", "ir", "tensor", "schedule", "target"},
    "driver": {"support", "ir", "tensor", "frontend", "schedule", "opt", "target", "codegen", "jit",
               "package"},
}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(folder):
    for root, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith((".h", ".cc", ".c")):
                yield os.path.join(root, f)


problems = []
checked = 0
for layer, allowed in ALLOWED.items():
    for path in sources(os.path.join(top, "compiler", layer)):
        checked += 1
        for inc in include.findall(open(path).read()):
            m = re.match(r"compiler/([a-z_]+)/", inc)
            if m and m.group(1) != layer and m.group(1) not in allowed:
                problems.append(f"{os.path.relpath(path, top)} includes {inc} ({layer} may not use {m.group(1)})")

abi_users = {"compiler": 0, "runtime": 0}
for part in ("runtime", "compiler"):
    for path in sources(os.path.join(top, part)):
        text = open(path).read()
        incs = include.findall(text)
        if part == "runtime":
            checked += 1
            for inc in incs:
                if inc.startswith("compiler/"):
                    problems.append(f"{os.path.relpath(path, top)} includes the compiler header {inc}")
        if any(i in ("kiln_abi.h", "schema/kiln_abi.h") for i in incs):
            abi_users[part] += 1
for part, n in abi_users.items():
    if n == 0:
        problems.append(f"nothing in {part}/ includes schema/kiln_abi.h")

machines = [os.path.relpath(p, top) for p in sources(os.path.join(top, "compiler"))
            if "createTargetMachine" in open(p).read()]
if len(machines) != 1:
    problems.append(f"createTargetMachine appears in {len(machines)} files: {machines}")

for p in problems:
    print("layering:", p)
print(f"layers: {checked} files checked, kiln_abi.h included by {abi_users['compiler']} compiler and "
      f"{abi_users['runtime']} runtime files, createTargetMachine in {', '.join(machines)}: "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
