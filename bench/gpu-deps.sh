#!/usr/bin/env bash
# The Debian packages the runtime build needs that a GPU machine's image may
# lack (it has nvcc, CMake, ninja and PyTorch, but no MLIR, FlatBuffers,
# CLI11, GoogleTest, oneDNN or the data set, and nothing can be fetched
# there). Download them here, carry .gpu-deps (git-ignored) with the
# working tree, unpack them there into a private prefix.
#
#   bench/gpu-deps.sh download   here: apt-get download into .gpu-deps/debs
#   eval "$(bench/gpu-deps.sh env)"
#                                there: unpack once into .gpu-deps/root and
#                                print the exports that make CMake, the
#                                compiler and the loader find them
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.gpu-deps"
packages=(
  flatbuffers-compiler flatbuffers-compiler-dev libflatbuffers-dev libflatbuffers2
  libcli11-dev googletest libgtest-dev libgmock-dev
  libdnnl-dev libdnnl2 ocl-icd-libopencl1
  nlohmann-json3-dev zlib1g-dev dataset-fashion-mnist
)

case "${1:-}" in
download)
  mkdir -p "$deps/debs"
  (cd "$deps/debs" && apt-get download "${packages[@]}")
  du -sh "$deps/debs"
  ;;
env)
  if [[ ! -d "$deps/debs" ]]; then
    echo "gpu-deps: no $deps/debs: run 'bench/gpu-deps.sh download' on the build machine and carry .gpu-deps" >&2
    exit 1
  fi
  if [[ ! -f "$deps/root/.unpacked" ]]; then
    mkdir -p "$deps/root"
    for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/root"; done
    touch "$deps/root/.unpacked"
  fi
  usr="$deps/root/usr"
  lib="$usr/lib/x86_64-linux-gnu"
  echo "export CMAKE_PREFIX_PATH=\"$usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}\""
  echo "export PATH=\"$usr/bin:\$PATH\""
  echo "export CPATH=\"$usr/include\${CPATH:+:\$CPATH}\""
  echo "export LIBRARY_PATH=\"$lib\${LIBRARY_PATH:+:\$LIBRARY_PATH}\""
  echo "export LD_LIBRARY_PATH=\"$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
  echo "export FASHION_MNIST_DIR=\"$usr/share/datasets/fashion-mnist\""
  ;;
*)
  echo "usage: bench/gpu-deps.sh download | env" >&2
  exit 1
  ;;
esac
