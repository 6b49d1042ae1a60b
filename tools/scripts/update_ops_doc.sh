#!/bin/sh
# Regenerates docs/ops.md from the ONNX conformance suite and raises the ratchet
# (tests/conformance/pass_ratchet.txt: the pass count, then passes plus frozen passes) to the new
# counts. Run after `tools/scripts/test.sh`
# has built the tree (or any `ninja -C build`).
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
ninja -C "$BUILD" kiln_conformance >/dev/null
DATA="$BUILD/tests/onnx_backend_data"
/usr/bin/python3 tests/conformance/generate_node_tests.py "$DATA" >/dev/null 2>&1
"$BUILD/tests/kiln_conformance" "$DATA/node" --report docs/ops.md | tail -n 1
PASS=$(grep -o '^\*\*[0-9]* pass' docs/ops.md | tr -dc '0-9')
FROZEN=$(grep -o '^\*\*[0-9]* pass, [0-9]* frozen' docs/ops.md | sed 's/.*pass, //' | tr -dc '0-9')
printf '%s\n%s\n' "$PASS" "$((PASS + FROZEN))" > tests/conformance/pass_ratchet.txt
echo "ratchet: $PASS passing tests, $((PASS + FROZEN)) with frozen inputs"
