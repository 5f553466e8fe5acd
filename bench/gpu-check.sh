#!/usr/bin/env bash
# The one command for a GPU machine: builds the CUDA runtime into build-gpu,
# runs the GPU runtime tests and the CUDA kernel tests, then times the seed
# Fashion-MNIST CNN (Adam 0.001) at global batch 256 and 1024:
#   graphrun --gpus 1 (inputs from the host, double-buffered), with
#   --cache-on-device, without CUDA graphs, graphrun --gpus 2 (logical GPUs
#   when there is one), PyTorch eager and torch.compile on the same GPU,
# their ratios, and the wall time to 0.90 test accuracy on Fashion-MNIST.
# The peers keep their data on the GPU (a resident synthetic batch; the
# whole training set for the accuracy run), so the ratios and our
# time-to-accuracy run use --cache-on-device: like for like.
# Prints a short table last; logs go under $OUT when set (else build-gpu/).
#
#   bench/gpu-check.sh [--steps N] [--plans DIR] [--data-dir DIR]
#   bench/gpu-check.sh --make-plans DIR   (no GPU needed: compile the plans
#                                          here, carry them with --plans)
#
# The GPU image has nvcc, CMake and PyTorch but not MLIR or the runtime's
# Debian libraries. Here, before the call: `bench/gpu-deps.sh download` and
# `bench/gpu-check.sh --make-plans .gpu-deps/plans`; then on the device:
# `bench/gpu-check.sh --plans .gpu-deps/plans`, carrying `.gpu-deps`. With
# --plans the build is runtime-only (-DGRAPH_BUILD_COMPILER=OFF).
#
# Exits 2, saying so, where there is no GPU; 1 when a build or test fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Carried Debian packages (bench/gpu-deps.sh), when there are some.
if [[ -d "$root/.gpu-deps/debs" ]]; then
  eval "$("$root/bench/gpu-deps.sh" env)"
fi
build="${GRAPH_GPU_BUILD_DIR:-$root/build-gpu}"
steps=100
plans=""
make_plans=""
data_dir="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
while [[ $# -gt 0 ]]; do
  case "$1" in
  --steps) steps="$2"; shift 2 ;;
  --plans) plans="$2"; shift 2 ;;
  --data-dir) data_dir="$2"; shift 2 ;;
  --make-plans) make_plans="$2"; shift 2 ;;
  *) echo "gpu-check: unknown argument '$1'" >&2; exit 1 ;;
  esac
done

# The seed CNN at both batch sizes, for 1 and 2 replicas.
compile_plans() { # tools-dir out-dir
  local tools="$1" dir="$2"
  mkdir -p "$dir"
  for batch in 256 1024; do
    "$tools/graph-import" "$root/examples/fashion_mnist_cnn.json" \
      --batch-size "$batch" -o "$dir/seed_b$batch.mlir" &&
      "$tools/graphc" "$dir/seed_b$batch.mlir" --replicas 1,2 \
        -o "$dir/seed_b$batch.plan" || return 1
  done
}

if [[ -n "$make_plans" ]]; then
  compile_plans "${GRAPH_TOOLS_DIR:-$root/build/bin}" "$make_plans" || exit 1
  echo "gpu-check: plans in $make_plans; on the GPU machine: bench/gpu-check.sh --plans $make_plans"
  exit 0
fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi -L fails): nothing to check; run it on a GPU machine" >&2
  exit 2
fi

out="${OUT:-$build/gpu-check}"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
gpus=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi -L | tee "$out/gpus.txt"
failed=0

# --- build --------------------------------------------------------------
echo "== build ($build)"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="/usr/lib/llvm-22${CMAKE_PREFIX_PATH:+;${CMAKE_PREFIX_PATH//:/;}}" \
    -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DGRAPH_BUILD_COMPILER="$([[ -n "$plans" ]] && echo OFF || echo ON)" \
    ${GRAPH_CMAKE_ARGS:-} >"$out/configure.log" 2>&1 ||
    { note "configure failed: $out/configure.log"; tail -20 "$out/configure.log"; exit 1; }
fi
if ! grep -q '^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt"; then
  note "the build in $build has no CUDA compiler: the CUDA backend is off"
  exit 1
fi
targets=(graphrun gpu-runtime-tests cuda-kernel-tests)
[[ -z "$plans" ]] && targets+=(graph-import graphc)
ninja -C "$build" "${targets[@]}" >"$out/build.log" 2>&1 ||
  { note "build failed: $out/build.log"; tail -30 "$out/build.log"; exit 1; }

# --- tests --------------------------------------------------------------
for t in gpu-runtime-tests cuda-kernel-tests; do
  echo "== $t"
  bin=$(find "$build" -name "$t" -type f -perm -u+x | head -1)
  if [[ -n "$bin" ]] && "$bin" --gtest_brief=1 >"$out/$t.log" 2>&1; then
    note "$t: $(grep -E '^\[  PASSED  \]' "$out/$t.log" | tail -1)$(grep -E '^\[  SKIPPED \] [0-9]' "$out/$t.log" | tail -1)"
  else
    failed=1
    note "$t: FAILED (log: $out/$t.log)"
    grep -E '^\[  FAILED  \]|Failure|error' "$out/$t.log" | head -20
  fi
done

# --- plans --------------------------------------------------------------
if [[ -z "$plans" ]]; then
  plans="$out/plans"
  compile_plans "$build/bin" "$plans" >"$out/plans.log" 2>&1 ||
    { note "compiling the plans failed: $out/plans.log"; exit 1; }
fi

# --- throughput ---------------------------------------------------------
graphrun() { "$build/bin/graphrun" "$@"; }
ours() { # plan gpus extra... -> images/s
  local plan="$1" n="$2"; shift 2
  graphrun "$plan" --gpus "$n" --data synthetic --steps "$((steps + 10))" \
    --warmup 10 --log-every 100000 "$@" 2>&1 | tee -a "$out/graphrun.log" |
    awk '/^images\/sec:/ { print $2 }' | tail -1
}
peer() { # batch extra... -> images/s
  local batch="$1"; shift
  python3 "$root/bench/pytorch_fashion_cnn.py" --device cuda --batch "$batch" \
    --steps "$steps" --warmup 10 "$@" 2>>"$out/pytorch.log" | tail -1
}
declare -A ips
for batch in 256 1024; do
  plan="$plans/seed_b$batch.plan"
  echo "== batch $batch"
  ips[ours1_$batch]=$(ours "$plan" 1)
  ips[ours1c_$batch]=$(ours "$plan" 1 --cache-on-device)
  ips[ours1ng_$batch]=$(ours "$plan" 1 --no-cuda-graph)
  ips[ours2_$batch]=$(ours "$plan" 2)
  ips[eager_$batch]=$(peer "$batch")
  ips[compile_$batch]=$(peer "$batch" --compile)
done

# --- time to 0.90 test accuracy -----------------------------------------
# Wall time from launch (compilation and start-up included, for both) to
# the first evaluation at or above 0.90, evaluating every 100 steps.
tta_ours="n/a" tta_eager="n/a" tta_compile="n/a"
if [[ -f "$data_dir/train-images-idx3-ubyte.gz" || -f "$data_dir/train-images-idx3-ubyte" ]]; then
  echo "== time to 0.90 test accuracy (batch 256)"
  start=$(date +%s.%N)
  tta_ours=$(graphrun "$plans/seed_b256.plan" --gpus 1 --data fashion_mnist \
    --data-dir "$data_dir" --cache-on-device --epochs 15 --eval-every 100 \
    --log-every 100000 2>&1 |
    tee "$out/graphrun-accuracy.log" | while IFS= read -r line; do
      if [[ "$line" =~ ^eval.*accuracy\ =\ ([0-9.]+) ]] &&
        awk -v a="${BASH_REMATCH[1]}" 'BEGIN { exit !(a >= 0.90) }'; then
        awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'
        break
      fi
    done)
  [[ -z "$tta_ours" ]] && tta_ours="not reached"
  tta_eager=$(python3 "$root/bench/pytorch_fashion_cnn.py" --device cuda \
    --data-dir "$data_dir" --target-accuracy 0.90 2>>"$out/pytorch.log" | tail -1)
  tta_compile=$(python3 "$root/bench/pytorch_fashion_cnn.py" --device cuda \
    --compile --data-dir "$data_dir" --target-accuracy 0.90 2>>"$out/pytorch.log" | tail -1)
else
  note "no Fashion-MNIST in $data_dir (--data-dir): time to accuracy skipped"
fi

# --- table --------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
{
  echo
  echo "seed CNN training, images/s ($gpus physical GPU(s); --gpus 2 is logical when 1)"
  printf '%-34s %12s %12s\n' "" "batch 256" "batch 1024"
  for row in "ours1:graphrun --gpus 1" "ours1c:graphrun --gpus 1 --cache-on-device" \
    "ours1ng:graphrun --gpus 1 --no-cuda-graph" \
    "ours2:graphrun --gpus 2" "eager:PyTorch eager" "compile:torch.compile"; do
    key="${row%%:*}"
    printf '%-34s %12s %12s\n' "${row#*:}" "${ips[${key}_256]:-n/a}" "${ips[${key}_1024]:-n/a}"
  done
  printf '%-34s %12s %12s\n' "ratio cached/eager (goal 3)" \
    "$(ratio "${ips[ours1c_256]:-0}" "${ips[eager_256]:-0}")" \
    "$(ratio "${ips[ours1c_1024]:-0}" "${ips[eager_1024]:-0}")"
  printf '%-34s %12s %12s\n' "ratio cached/torch.compile (1.5)" \
    "$(ratio "${ips[ours1c_256]:-0}" "${ips[compile_256]:-0}")" \
    "$(ratio "${ips[ours1c_1024]:-0}" "${ips[compile_1024]:-0}")"
  echo "time to 0.90 test accuracy (s): graphrun $tta_ours | eager $tta_eager | torch.compile $tta_compile"
  [[ $failed -ne 0 ]] && echo "SOME TESTS FAILED: see $out"
} | tee -a "$summary"
exit $failed
