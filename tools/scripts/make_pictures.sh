#!/usr/bin/env bash
# The pictures in docs/images, made by kilnc from the samples (README, docs/architecture.md):
# per sample, the memory plan and schedule (`kilnc inspect PKG --svg`) and the kernel graph
# (`kilnc plan MODEL --dot`, drawn by Graphviz's dot). Needs the main build and graphviz
# (tools/scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
kilnc=${KILN_BUILD_DIR:-build}/tools/kilnc/kilnc
out=docs/images
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
for model in samples/kg/convnet.kg samples/digits/digits.onnx; do
  name=$(basename "${model%.*}")
  "$kilnc" compile "$model" -o "$tmp/$name.kiln" --quiet
  "$kilnc" inspect "$tmp/$name.kiln" --svg "$out/$name-memory-plan.svg" > /dev/null
  "$kilnc" plan "$model" --dot "$tmp/$name.dot" > /dev/null
  dot -Tsvg "$tmp/$name.dot" -o "$out/$name-kernels.svg"
  echo "wrote $out/$name-memory-plan.svg and $out/$name-kernels.svg"
done
