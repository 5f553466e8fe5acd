#!/usr/bin/env bash
# Gradients across workers in float32 against bfloat16 (graphrun
# --allreduce-dtype), on this host, in one run:
#
#   1. bench/mpi-allreduce: the seed CNN's 93,322 gradients summed across 2
#      processes, 3000 times: a bare float32 MPI_Allreduce against our
#      cross-worker step in fp32, then in bf16 (round, sum as bf16 with a
#      user op, widen: half the bytes).
#   2. The seed CNN trained by 2 workers x 1 thread (global batch 256, Adam,
#      real Fashion-MNIST as arrays, the test set as validation data after
#      each epoch), fp32 and bf16 alternating, REPS seeds: the median step,
#      the step timer's cross-worker all-reduce, and test accuracy per epoch.
#
#   bench/allreduce-dtype.sh [epochs] [build-dir]     REPS=N (default 2)
#
# Both workers share this host, so "the wire" is Open MPI's shared memory:
# the bytes halve, the time they take is small either way. Prints lscpu's
# model and the load average (take figures from an idle machine).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
epochs="${1:-2}"
build="${2:-$root/build}"
reps="${REPS:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
mpirun=(mpirun --oversubscribe --bind-to none)
python=/usr/bin/python3 # NumPy

echo "machine: $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p')"
echo "load before: $(uptime | sed 's/.*load average/load average/')"

echo "== the cross-worker step alone (bench/mpi-allreduce, 2 processes)"
for dtype in fp32 bf16; do
  "${mpirun[@]}" -np 2 "$build/bin/mpi-allreduce" --reps 3000 --dtype "$dtype" |
    sed "s/^/[$dtype] /"
done

echo "== the seed CNN, 2 workers x 1 thread, $epochs epochs, $reps seed(s)"
"$python" "$root/test/tools/graphrun/Inputs/fashion_mnist_arrays.py" \
  "$work/arrays" >/dev/null
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" \
  --batch-size 256 -o "$work/cnn.mlir"
"$build/bin/graphc" "$work/cnn.mlir" --replicas 2 -o "$work/cnn.plan"
for seed in $(seq 1 "$reps"); do
  for dtype in fp32 bf16; do
    out="$work/$dtype.$seed"
    mkdir -p "$out"
    "${mpirun[@]}" -np 2 "$build/bin/graphrun" "$work/cnn.plan" --cpus 1 \
      --data "arrays:$work/arrays/train.npz" \
      --validation-data "arrays:$work/arrays/test.npz" --epochs "$epochs" \
      --seed "$seed" --no-progress --allreduce-dtype "$dtype" \
      --csv-log "$out/epochs.csv" >"$out/log"
  done
done

"$python" - "$work" "$reps" <<'PY'
import csv, re, sys
import numpy as np
work, reps = sys.argv[1], int(sys.argv[2])
for dtype in ("fp32", "bf16"):
    steps, across, acc = [], [], []
    for seed in range(1, reps + 1):
        log = open(f"{work}/{dtype}.{seed}/log").read()
        steps.append(float(re.search(r"median ([0-9.]+) sec", log).group(1)))
        across.append(float(re.search(r"across workers ([0-9.]+) sec", log).group(1)))
        with open(f"{work}/{dtype}.{seed}/epochs.csv") as f:
            acc.append([float(r["val_accuracy"]) for r in csv.DictReader(f)])
    acc = np.array(acc)
    print("%s: median step %.1f ms, across workers %.2f ms a step (mean of "
          "seeds); test accuracy per epoch (mean of seeds) %s"
          % (dtype, 1e3 * np.mean(steps), 1e3 * np.mean(across),
             np.round(acc.mean(0), 4).tolist()))
PY
echo "load after: $(uptime | sed 's/.*load average/load average/')"
