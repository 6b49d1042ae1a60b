#!/usr/bin/env bash
# The whole test suite: installs what is missing (Debian packages), builds kiln (Release) and
# runs every test with ctest. Usage: tools/scripts/test.sh [extra ctest args]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

tools/scripts/install-deps.sh

build=${KILN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
