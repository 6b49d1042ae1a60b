#!/usr/bin/env bash
# The main job end to end on the bundled sample: install what is missing, build, compile the
# digits ONNX model with kilnc into a package, and run it with the C runtime (samples/digits).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

tools/scripts/install-deps.sh

build=${KILN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target kilnc digits

echo "== kilnc compile samples/digits/digits.onnx -> $build/digits.kiln"
"$build/tools/kilnc/kilnc" compile samples/digits/digits.onnx -o "$build/digits.kiln"
"$build/tools/kilnc/kilnc" inspect "$build/digits.kiln"
echo "== running the package with the C runtime (samples/digits/digits.c)"
"$build/samples/digits" "$build/digits.kiln" samples/digits/test_images.npy samples/digits/test_labels.npy
