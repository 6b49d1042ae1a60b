#!/usr/bin/env bash
# The runtime's concurrency soak at full size: 64 sessions x 2 threads on one model, 10,000 runs,
# every output bit-identical to a single-threaded run; in the Release build and under
# ThreadSanitizer. Usage: tools/scripts/soak.sh [RUNS] (after tools/scripts/test.sh has built).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${KILN_BUILD_DIR:-build}
runs=${1:-10000}
cmake --build "$build" --target runtime_soak_tests runtime_tsan_tests > /dev/null
for bin in runtime_soak_tests runtime_tsan_tests; do
  echo "== $bin: $runs runs"
  KILN_SOAK_RUNS=$runs "$build/tests/$bin" --gtest_filter='Soak.*'
done
