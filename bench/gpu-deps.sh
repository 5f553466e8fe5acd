#!/usr/bin/env bash
# What a GPU machine needs to run bench/gpu-check.sh without building: the
# machines lent here have nvcc, cuDNN, cuBLAS, NCCL and PyTorch, but none of
# the runtime's Debian libraries (oneDNN, HDF5, OpenMPI, libjpeg-turbo, ...),
# no MLIR and no way to fetch anything, and their device time is minutes.
# So the runtime is built here (build/, CUDA on, sm_90) and carried.
#
#   bench/gpu-deps.sh bundle   here, after ./scripts/build.sh: writes
#                              .gpu-deps (git-ignored, under 64 MiB):
#                                prebuilt.tar.xz  graphrun and the two GPU
#                                                 test programs, with every
#                                                 library they load except
#                                                 glibc's and CUDA's
#                                plans/           the seed CNN's plans
#                                fashion-mnist/   the data set
#   bench/gpu-deps.sh plans DIR
#                              the seed plans alone, into DIR (gpu-check's
#                              own build uses it)
#   eval "$(bench/gpu-deps.sh env)"
#                              there: unpacks once into .gpu-deps/prebuilt
#                              and prints the exports that make the loader
#                              find the carried libraries and the machine's
#                              own CUDA, cuDNN, cuBLAS and NCCL (its
#                              /usr/local/cuda, else PyTorch's wheels)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.gpu-deps"
build="${GRAPH_BUILD_DIR:-$root/build}"
programs=(bin/graphrun test/runtime/gpu/gpu-runtime-tests
  test/runtime/cuda/cuda-kernel-tests)
# Loaded from the GPU machine itself: glibc's (an older glibc's libraries
# run on a newer one) and the CUDA libraries that must match its driver.
own='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libcudart|libcublas|libcublasLt|libcudnn|libnccl)\.so'

# The seed CNN: batch 64 for the GPU tests, 256 and 1024 for the figures,
# each for 1, 2 and 4 replicas (logical GPUs on one device); and at 256 with
# conv kernels kept HWIO (what the per-step filter transposes cost).
compile_plans() { # out-dir
  local dir="$1" tools="$build/bin"
  mkdir -p "$dir"
  for batch in 64 256 1024; do
    "$tools/graph-import" "$root/examples/fashion_mnist_cnn.json" \
      --batch-size "$batch" -o "$dir/seed_b$batch.mlir"
    "$tools/graphc" "$dir/seed_b$batch.mlir" --replicas 1,2,4 \
      -o "$dir/seed_b$batch.plan"
    if [[ $batch -eq 256 ]]; then
      "$tools/graphc" "$dir/seed_b$batch.mlir" --replicas 1 \
        --keras-filter-layout -o "$dir/seed_b${batch}_hwio.plan"
    fi
    rm "$dir/seed_b$batch.mlir"
  done
}

case "${1:-}" in
bundle)
  for p in "${programs[@]}"; do
    [[ -x "$build/$p" ]] || { echo "gpu-deps: $build/$p is not built (ninja -C $build ${p##*/})" >&2; exit 1; }
  done
  ldd "$build/bin/graphrun" | grep libcudart >/dev/null ||
    { echo "gpu-deps: $build/bin/graphrun is built without CUDA" >&2; exit 1; }
  rm -rf "$deps"
  stage="$deps/prebuilt"
  mkdir -p "$stage/bin" "$stage/lib"
  for p in "${programs[@]}"; do cp "$build/$p" "$stage/bin/"; done
  for p in "${programs[@]}"; do ldd "$build/$p"; done |
    awk '/=> \// { print $1, $3 }' | sort -u | while read -r name path; do
      [[ "$name" =~ $own ]] || cp -L "$path" "$stage/lib/$name"
    done
  tar -C "$deps" -cJf "$deps/prebuilt.tar.xz" prebuilt
  rm -rf "$stage"
  compile_plans "$deps/plans"
  cp -r /usr/share/datasets/fashion-mnist "$deps/fashion-mnist"
  du -sh "$deps"/*
  echo "gpu-deps: carry .gpu-deps; there: bench/gpu-check.sh"
  ;;
plans)
  [[ -n "${2:-}" ]] || { echo "usage: bench/gpu-deps.sh plans DIR" >&2; exit 1; }
  compile_plans "$2"
  ;;
env)
  [[ -f "$deps/prebuilt.tar.xz" ]] ||
    { echo "gpu-deps: no $deps/prebuilt.tar.xz: run 'bench/gpu-deps.sh bundle' on the build machine and carry .gpu-deps" >&2; exit 1; }
  [[ -d "$deps/prebuilt" ]] || tar -C "$deps" -xJf "$deps/prebuilt.tar.xz"
  # The first directory that has each CUDA library; /usr/local/cuda first.
  cuda_dirs=""
  for lib in libcudart.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
    found=$(find /usr/local/cuda/lib64/ /usr/local/cuda/lib/ /usr/local/cuda/targets/ \
      /opt/ /usr/lib/x86_64-linux-gnu/ -name "$lib" 2>/dev/null | head -1 || true)
    [[ -z "$found" ]] && { echo "gpu-deps: no $lib on this machine" >&2; continue; }
    dir=$(dirname "$found")
    [[ ":$cuda_dirs:" == *":$dir:"* ]] || cuda_dirs="${cuda_dirs:+$cuda_dirs:}$dir"
  done
  echo "export GRAPH_PREBUILT=\"$deps/prebuilt/bin\""
  echo "export LD_LIBRARY_PATH=\"$deps/prebuilt/lib:$cuda_dirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
  echo "export GRAPH_TEST_SEED_PLAN=\"$deps/plans/seed_b64.plan\""
  echo "export FASHION_MNIST_DIR=\"$deps/fashion-mnist\""
  ;;
*)
  echo "usage: bench/gpu-deps.sh bundle | plans DIR | env" >&2
  exit 1
  ;;
esac
