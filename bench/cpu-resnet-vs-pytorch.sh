#!/usr/bin/env bash
# A ResNet-style training step on CPU, ours against PyTorch's, in one run:
# examples/resnet_small.json (bench/keras_resnet_small.py: a 3x3 stem and
# six basic blocks of 32/64/128 filters with batch norm and projection
# shortcuts, 0.7 M parameters), input 32x32x3, global batch 128, Adam 0.001,
# synthetic data, 2 threads for both, glibc's malloc kept from returning its
# buffers on both sides. Ours runs one replica with a 2-thread pool and two
# replicas of one thread each; PyTorch (Debian's 1.13) runs the same network
# (bench/pytorch_resnet_small.py, channels_last, set_num_threads(2)). Two
# rounds, alternating; the load average before and after. Last, the step's
# compute floor (bench/cpu-kernels --floor) and our efficiency against it.
#
#   bench/cpu-resnet-vs-pytorch.sh [steps] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-10}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
batch=128

"$root/bench/pytorch-peer.sh"

"$build/bin/graph-import" "$root/examples/resnet_small.json" --batch-size $batch -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)
ours() { # replicas
  "${tuned[@]}" "$build/bin/graphrun" "$work/m.plan" --data synthetic \
    --steps "$((steps + 2))" --cpus "$1" --warmup 2 --log-every 0 \
    --no-progress 2>&1 | awk '/^images\/sec:/ { print $2 }'
}
peer() {
  "${tuned[@]}" /usr/bin/python3 "$root/bench/pytorch_resnet_small.py" \
    --steps "$steps" --warmup 2 --batch $batch
}

declare -A rate
for round in 1 2; do
  echo "round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  rate[$round,0]=$(peer)
  rate[$round,1]=$(ours 1)
  rate[$round,2]=$(ours 2)
done
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg)"

labels=("PyTorch 1.13, channels_last" "graphrun cpu, 1 replica x 2 threads"
  "graphrun cpu, 2 replicas x 1 thread")
echo
printf '%-38s %10s %8s %10s %8s\n' "ResNet-small, batch $batch, $steps steps" \
  "round 1" "ratio" "round 2" "ratio"
for i in 0 1 2; do
  printf '%-38s %10s %8s %10s %8s\n' "${labels[$i]}" \
    "${rate[1,$i]}" "$(awk -v a="${rate[1,$i]}" -v b="${rate[1,0]}" 'BEGIN { printf "%.2f", a / b }')" \
    "${rate[2,$i]}" "$(awk -v a="${rate[2,$i]}" -v b="${rate[2,0]}" 'BEGIN { printf "%.2f", a / b }')"
done
echo "(images/s; ratio: against PyTorch in the same round)"

echo
"${tuned[@]}" "$build/bin/cpu-kernels" "$work/m.plan" --floor --reps 5 >"$work/floor.txt"
floor_ms=$(awk '/^floor / { print $2 }' "$work/floor.txt")
echo "compute floor: $floor_ms ms a step (bench/cpu-kernels --floor)"
for i in 1 2; do
  for round in 1 2; do
    awk -v r="${rate[$round,$i]}" -v f="$floor_ms" -v b=$batch -v l="${labels[$i]}" \
      -v n=$round 'BEGIN { ms = b / r * 1000;
        printf "%-38s round %d: step %.1f ms, efficiency %.0f%% of the floor\n", l, n, ms, 100 * f / ms }'
  done
done
