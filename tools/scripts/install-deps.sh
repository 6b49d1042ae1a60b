#!/usr/bin/env bash
# Installs every Debian package that kiln's build, tests, demo and benchmarks need.
# Idempotent: packages already present are skipped; `apt-get update` runs at most once,
# and only when something is missing. Must run as root (or with sudo available).
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  llvm-19 llvm-19-dev liblld-19-dev lld-19 clang-19 libclang-rt-19-dev
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev
  clang-format-19
  libflatbuffers-dev flatbuffers-compiler
  libffi-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  # model export, reference outputs, conformance data
  python3 python3-numpy python3-onnx python3-torch python3-torchvision python3-sklearn
  # the Python module's tests; Graphviz renders `kilnc plan --dot` (tests and docs pictures)
  python3-pytest graphviz
  # edge: AArch64 cross toolchain and user-mode emulation
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  # benchmarks: ONNX Runtime through node (npm comes with nodejs builds that bundle it; the
  # benchmark installs Debian's npm itself if it is missing), GNU time for peak memory
  nodejs time
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
