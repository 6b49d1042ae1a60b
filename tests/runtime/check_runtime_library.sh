#!/usr/bin/env bash
# libkiln_rt links only libc (and pthreads, part of libc): its only DT_NEEDED entries are libc and
# the dynamic loader, and every undefined symbol is versioned GLIBC_*. Prints the stripped sizes.
# usage: check_runtime_library.sh LIBKILN_RT.so LIBKILN_RT.a
set -euo pipefail
so=$1
ar=$2
needed=$(readelf -d "$so" | awk '/NEEDED/ {print $5}' | tr -d '[]')
echo "DT_NEEDED: $needed"
for lib in $needed; do
  case "$lib" in
    libc.so.*|ld-linux*|libpthread.so.*) ;;
    *) echo "FAIL: libkiln_rt depends on $lib"; exit 1 ;;
  esac
done
undef=$(nm -D --undefined-only "$so" | awk '{print $2}')
bad=""
for sym in $undef; do
  case "$sym" in
    *@GLIBC_*) ;;
    __gmon_start__|_ITM_*|__cxa_finalize*) ;;  # weak hooks every shared object carries
    *) bad="$bad $sym" ;;
  esac
done
if [ -n "$bad" ]; then echo "FAIL: undefined symbols outside libc:$bad"; exit 1; fi
echo "undefined symbols: $(echo "$undef" | wc -w), all from glibc"
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^kiln_' || true)
if [ -n "$exported" ]; then echo "FAIL: exports beyond the kiln_ API: $exported"; exit 1; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strip -o "$tmp/so" "$so"
cp "$ar" "$tmp/a.a"
strip --strip-unneeded "$tmp/a.a"
so_size=$(stat -c %s "$tmp/so")
a_size=$(stat -c %s "$tmp/a.a")
# The footprint goal (docs/edge.md): each at most 64 KiB stripped.
if [ "$so_size" -gt 65536 ] || [ "$a_size" -gt 65536 ]; then
  echo "FAIL: stripped sizes $so_size / $a_size bytes exceed 64 KiB"
  exit 1
fi
echo "stripped size: libkiln_rt.so $so_size bytes, libkiln_rt.a $a_size bytes"
