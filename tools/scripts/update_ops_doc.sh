#!/bin/sh
# Regenerates docs/ops.md from the ONNX conformance suite and raises the ratchet
# (tests/conformance/pass_ratchet.txt) to the new pass count. Run after `tools/scripts/test.sh`
# has built the tree (or any `ninja -C build`).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
ninja -C "$BUILD" kiln_conformance >/dev/null
DATA="$BUILD/tests/onnx_backend_data"
/usr/bin/python3 tests/conformance/generate_node_tests.py "$DATA" >/dev/null 2>&1
"$BUILD/tests/kiln_conformance" "$DATA/node" --report docs/ops.md | tail -n 1
grep -o '^\*\*[0-9]* pass' docs/ops.md | tr -dc '0-9' > tests/conformance/pass_ratchet.txt
echo >> tests/conformance/pass_ratchet.txt
echo "ratchet: $(cat tests/conformance/pass_ratchet.txt) passing tests"
