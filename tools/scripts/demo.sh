#!/usr/bin/env bash
# The main job end to end on the bundled sample: install what is missing, build, compile the
# sample model with kilnc, run it with the C runtime, print the result.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

tools/scripts/install-deps.sh

build=${KILN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"

if [ ! -x "$build/tools/kilnc/kilnc" ] || [ ! -d samples/digits ]; then
  echo "demo: not built yet - the compiler CLI, the C runtime and the digits sample land with"
  echo "issues #3-#5; today the build and the IR core (see: tools/scripts/test.sh) are what exists."
  exit 0
fi
