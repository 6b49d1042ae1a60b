#!/usr/bin/env bash
# Every C/C++ source in the repository is formatted as .clang-format says (clang-format-19).
# Usage: tools/scripts/check_format.sh [--fix]. Prints the files that differ; exits 1 if any do.
set -euo pipefail
cd "$(dirname "$0")/../.."
cf=$(command -v clang-format-19 || true)
if [ -z "$cf" ]; then
  echo "check_format: clang-format-19 is not installed (tools/scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cc' | sort -u)
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if [ "${1:-}" = "--fix" ]; then
    "$cf" -i "$f"
  elif ! "$cf" --dry-run --Werror "$f" > /dev/null 2>&1; then
    bad+=("$f")
  fi
done
for f in "${bad[@]}"; do echo "not clang-formatted: $f"; done
echo "check_format: ${#files[@]} files, ${#bad[@]} not formatted"
[ ${#bad[@]} -eq 0 ]
