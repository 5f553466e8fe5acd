#!/usr/bin/env bash
# Whether a long cpu run slows down as Adam's first moments decay into
# subnormal floats, with the cpu backend's flush to zero (FTZ and DAZ on
# every thread of a step, the default) and without it (--keep-denormals):
# the median step time of the first and the last 500 steps of E epochs of
# real Fashion-MNIST (a slot whose gradient stays 0 for hundreds of steps --
# a ReLU unit no example activates, a pixel that is 0 in every image --
# decays by beta_1 a step through the subnormal range), and the share of
# subnormal floats in the Adam `m` slots of the run's last checkpoint.
#
#   bench/cpu-denormals.sh [epochs] [build-dir]
#
# Models: the seed CNN (examples/fashion_mnist_cnn.json, global batch 256,
# 234 steps an epoch) and Keras' multi-GPU-guide MLP (examples/mgpu_mlp.json,
# 784-256-256-10, batch 64 as in that guide: 937 steps an epoch, the pixels
# as NumPy arrays as its users hold them), 1 replica x 2 threads, each run
# from the same seed; flushed and kept alternate, so a change of load hits
# both. Prints lscpu's model and flags and the load average first (the
# machine is shared: take figures from an idle one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
epochs="${1:-5}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3 # NumPy

echo "machine: $(nproc) cores"
lscpu | grep -E '^(Model name|Flags):' | sed 's/  */ /g'
echo "load before: $(uptime | sed 's/.*load average/load average/')"

"$python" "$root/test/tools/graphrun/Inputs/fashion_mnist_arrays.py" \
  "$work/arrays" --flat >/dev/null
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/cnn.mlir"
"$build/bin/graphc" "$work/cnn.mlir" --replicas 1 -o "$work/cnn.plan"
"$build/bin/graph-import" "$root/examples/mgpu_mlp.json" --batch-size 64 -o "$work/mlp.mlir"
"$build/bin/graphc" "$work/mlp.mlir" --replicas 1 -o "$work/mlp.plan"

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)

run() { # label, plan, data, flags...
  local label=$1 plan=$2 data=$3
  shift 3
  local out="$work/$label"
  rm -rf "$out" && mkdir -p "$out"
  local start=$SECONDS
  "${tuned[@]}" "$build/bin/graphrun" "$work/$plan" --backend cpu --cpus 1 \
    --data "$data" --epochs "$epochs" --seed 1 --log-every 1 --no-progress \
    --metrics "$out/m.jsonl" --checkpoint-dir "$out/ckpt" \
    --checkpoint-every 0 "$@" >"$out/log"
  local loss
  loss=$(awk '/^Loss for final step:/ { sub(/\.$/, "", $5); print $5 }' "$out/log")
  printf '%-34s %s, final loss %s, %d s\n' "$label" \
    "$("$python" "$root/bench/step_time_drift.py" "$out/m.jsonl" --window 500 \
      --checkpoint "$(ls "$out"/ckpt/*.safetensors | tail -1)")" \
    "$loss" "$((SECONDS - start))"
}

echo "$epochs epochs each, 1 replica x 2 threads, median step time of the first and last 500 steps:"
run "mlp, flush (default)" mlp.plan "arrays:$work/arrays/train.npz"
run "mlp, --keep-denormals" mlp.plan "arrays:$work/arrays/train.npz" --keep-denormals
run "cnn, flush (default)" cnn.plan fashion_mnist
run "cnn, --keep-denormals" cnn.plan fashion_mnist --keep-denormals
echo "load after: $(uptime | sed 's/.*load average/load average/')"
