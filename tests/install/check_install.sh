#!/usr/bin/env bash
# The install tree as a user meets it: `cmake --install BUILD --prefix P` writes exactly the
# files of tests/install/layout.txt; the tree still works after it is moved; a fresh C
# application builds against it with find_package(kiln_rt) (shared and static) and with
# `pkg-config --cflags --libs kiln_rt`; all of them, and the installed Python module, compute
# the same outputs from the same package; the installed tools run.
#
# usage: check_install.sh BUILD_DIR PACKAGE WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1 package=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/installed" > "$work/install.log"
(cd "$work/installed" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort) > "$work/got.txt"
grep -v '^#' "$here/layout.txt" | awk '{print $1}' | sort > "$work/want.txt"
diff -u "$work/want.txt" "$work/got.txt" || fail "the installed files differ from tests/install/layout.txt"
echo "ok: the install tree is exactly layout.txt ($(wc -l < "$work/want.txt") files)"

# Everything below uses the tree from somewhere else: nothing may point back at the build.
mv "$work/installed" "$work/moved"
p=$work/moved
grep -q 'SONAME.*libkiln_rt.so.0.1' <<< "$(readelf -d "$p/lib/libkiln_rt.so")" || fail "soname"

cmake -S "$here/app" -B "$work/cmake-app" -G Ninja -DCMAKE_PREFIX_PATH="$p" > "$work/cmake.log" ||
  { cat "$work/cmake.log"; fail "find_package(kiln_rt) failed"; }
cmake --build "$work/cmake-app" > "$work/build.log" || { cat "$work/build.log"; fail "building the app"; }
export PKG_CONFIG_PATH=$p/lib/pkgconfig
[ "$(pkg-config --modversion kiln_rt)" = "$("$p/bin/kiln-run" --version | head -1 | awk '{print $2}')" ] ||
  fail "pkg-config's version is not the runtime's"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$here/app/app.c" $(pkg-config --cflags --libs kiln_rt) \
  -Wl,-rpath,"$p/lib" -o "$work/app_pkg_config"
echo "ok: find_package(kiln_rt) and pkg-config builds"

"$work/cmake-app/app" "$package" > "$work/out_cmake.txt"
"$work/cmake-app/app_static" "$package" > "$work/out_static.txt"
"$work/app_pkg_config" "$package" > "$work/out_pkg_config.txt"
# (ldd's output captured first: `ldd | grep -q` under pipefail fails whenever grep's early exit
# kills ldd with SIGPIPE, which made this test flaky.)
deps_static=$(ldd "$work/cmake-app/app_static")
deps_pc=$(ldd "$work/app_pkg_config")
grep -q libkiln_rt <<< "$deps_static" && fail "app_static links libkiln_rt.so"
grep -q "$p/lib/libkiln_rt.so" <<< "$deps_pc" || fail "app_pkg_config does not use the install"
PYTHONPATH=$p/lib/python3/dist-packages KILN_RT_LIBRARY= /usr/bin/python3 - "$package" > "$work/out_python.txt" <<'PY'
import sys
import numpy as np
import kiln
m = kiln.Model(sys.argv[1])
ins = {}
for t in m.inputs:
    k = np.arange(int(np.prod(t.shape)), dtype=np.int64)
    ins[t.name] = (((k * 7) % 11).astype(np.float32) / np.float32(11) - np.float32(0.5)).reshape(t.shape)
print(f"libkiln_rt {kiln.version()[0]}")
for name, y in m.session().run(ins).items():
    f = y.reshape(-1)
    s = 0.0
    for v in f:  # in order, in double, as app.c sums
        s += float(v)
    print(f"{name}: {float(f[0]):.6g} {float(f[1]):.6g} ... sum {s:.6f}")
PY
for o in static pkg_config python; do
  diff -u "$work/out_cmake.txt" "$work/out_$o.txt" || fail "the $o build computes something else"
done
cat "$work/out_cmake.txt"
echo "ok: shared, static, pkg-config and Python agree"
"$p/bin/kiln-run" "$package" --info > /dev/null || fail "installed kiln-run"
if [ -e "$p/bin/kilnc" ]; then "$p/bin/kilnc" --version > /dev/null || fail "installed kilnc"; fi
echo "install: all checks pass"
