#!/usr/bin/env bash
# A longer fuzzing campaign than the suite's fixed-count runs (about a minute per target): tools/scripts/fuzz.sh HOURS
# (default 1) splits HOURS over the three libFuzzer targets (package, onnx, graph_file), run one
# after another with random seeds and corpora that keep growing in build/fuzz_campaign (the
# suite's own runs use a fixed seed and start from the seeds each time).
# Findings are written to build/tests/fuzz-findings/. Needs the main build (tools/scripts/test.sh),
# which builds the targets in build/fuzz when clang-19 is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
build=${KILN_BUILD_DIR:-build}
hours=${1:-1}
seconds=$(/usr/bin/python3 -c "print(int(float('$hours') * 3600 / 3))")
cmake --build "$build" --target kiln_fuzzers kiln_test_packages > /dev/null
mkdir -p "$build/tests/fuzz-findings"
status=0
for target in package onnx graph_file; do
  case $target in
    package) seeds="$build/tests/packages" ;;
    onnx) seeds="$top/tests/fuzz/onnx" ;;
    graph_file) seeds="$top/tests/fuzz/kg" ;;
  esac
  corpus="$build/fuzz_campaign/$target"
  mkdir -p "$corpus"
  echo "== fuzz_$target for ${seconds} s"
  ASAN_OPTIONS=allocator_may_return_null=1 KILN_FUZZ_KNOWN_CODE="$build/tests/packages" \
    "$build/fuzz/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/tests/fuzz-findings/" \
    "$corpus" $seeds || status=1
done
exit $status
