#!/usr/bin/env bash
# Installs the Debian packages the project needs, and only those missing.
# Idempotent and quick when everything is there (one dpkg query). Used by
# both README commands and by .ci/run.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ pkg-config clang-format python3 python3-venv
  # compiler side: MLIR/LLVM 22 (lit, FileCheck, mlir-tblgen come with it)
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  # frontends and tests (zlib: the CRC-32 of .keras members)
  libzip-dev zlib1g-dev libgtest-dev
  # runtime: plan format, flags, CPU kernels, data, safetensors' JSON header
  libflatbuffers-dev flatbuffers-compiler libcli11-dev libdnnl-dev
  nlohmann-json3-dev dataset-fashion-mnist
  # oneDNN's dnnl-config.cmake calls find_package(OpenCL); libdnnl-dev only
  # recommends this, and we install with --no-install-recommends
  ocl-icd-opencl-dev
  # multi-worker training: Open MPI launches the workers (mpirun) and
  # carries their cross-process all-reduce
  libopenmpi-dev openmpi-bin
  # the two-host test: a network namespace per worker (ip netns)
  iproute2
  # test/fuzz: the libFuzzer targets build with clang; libFuzzer and the
  # sanitizer runtimes are only a Recommends of clang, so they are named
  clang libclang-rt-14-dev
  # test/compare: the one-step comparison with an independent implementation
  python3-torch python3-numpy
  # image folders: JPEG decoding (TurboJPEG API); Keras weight files (HDF5);
  # the tests write JPEG folders (PIL) and Keras-layout .h5 files (h5py)
  libturbojpeg0-dev libhdf5-dev python3-pil python3-h5py
  # the Python module (python/graphc): CPython's headers (pybind11 comes
  # from PyPI, into the test venv: Debian's 2.10 predates NumPy 2)
  python3-dev
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all ${#packages[@]} packages present"

# The tests' Keras 3 and tensorboard, from PyPI into a venv of their own.
"$(dirname "${BASH_SOURCE[0]}")/test-venv.sh" >/dev/null
echo "setup: test venv ready"
