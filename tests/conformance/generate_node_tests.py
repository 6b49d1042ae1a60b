#!/usr/bin/python3
"""Generates ONNX 1.12's backend node tests (model.onnx + input/output protobufs) into OUT_DIR.

python3-onnx 1.12's generator still uses np.float, np.int, np.bool and np.object, which numpy 1.24
removed; they were aliases of the Python builtins, so restoring them reproduces the original data.
Usage: generate_node_tests.py OUT_DIR
"""
import os
import sys

import numpy as np

for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, builtin)

from onnx.backend.test.cmd_tools import main  # noqa: E402  (needs the aliases above)

if len(sys.argv) != 2:
    sys.exit("usage: generate_node_tests.py OUT_DIR")
out = sys.argv[1]
sys.argv = ["backend-test-tools", "generate-data", "-o", out]
main()
node_dir = os.path.join(out, "node")
count = len([d for d in os.listdir(node_dir) if os.path.isdir(os.path.join(node_dir, d))])
print(f"generated {count} node tests in {node_dir}")
