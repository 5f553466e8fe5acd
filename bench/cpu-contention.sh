#!/usr/bin/env bash
# Training under contention: the seed CNN (batch 256, synthetic data, 2
# threads) on an idle machine and then with one other CPU-bound process
# running (a busy loop, as a second job on the host would be), ours (1
# replica x 2 threads, 2 replicas x 1 thread) and the tuned PyTorch
# (NCHW, set_num_threads(2)), one after the other, twice. Prints images/s
# and how much each keeps of its idle figure: issue 15 asks that ours fall
# by no more than PyTorch's.
#
#   bench/cpu-contention.sh [steps] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-30}"
build="${2:-$root/build}"
work="$(mktemp -d)"
busy=""
trap 'rm -rf "$work"; [[ -n "$busy" ]] && kill "$busy" 2>/dev/null || true' EXIT

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)
ours() {
  "${tuned[@]}" "$build/bin/graphrun" "$work/m.plan" --data synthetic \
    --steps "$((steps + 5))" --cpus "$1" --warmup 5 --log-every 0 \
    --no-progress 2>&1 | awk '/^images\/sec:/ { print $2 }'
}
peer() {
  "${tuned[@]}" /usr/bin/python3 "$root/bench/pytorch_fashion_cnn.py" \
    --steps "$steps" --warmup 5
}

labels=("graphrun cpu, 1 replica x 2 threads" "graphrun cpu, 2 replicas x 1 thread"
  "PyTorch eager, NCHW, tuned")
declare -A rate
for state in idle busy; do
  if [[ $state == busy ]]; then
    /usr/bin/python3 -c 'while True: pass' &
    busy=$!
    sleep 1
  fi
  for round in 1 2; do
    echo "$state, round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    rate[$state,$round,0]=$(ours 1)
    rate[$state,$round,1]=$(ours 2)
    rate[$state,$round,2]=$(peer)
  done
done
kill "$busy"
busy=""

echo
printf '%-38s %16s %16s %8s\n' "seed CNN, batch 256" "idle (2 rounds)" "busy (2 rounds)" "kept"
for i in 0 1 2; do
  printf '%-38s %16s %16s %8s\n' "${labels[$i]}" \
    "${rate[idle,1,$i]} ${rate[idle,2,$i]}" "${rate[busy,1,$i]} ${rate[busy,2,$i]}" \
    "$(awk -v a="${rate[idle,1,$i]}" -v b="${rate[idle,2,$i]}" -v c="${rate[busy,1,$i]}" -v d="${rate[busy,2,$i]}" \
      'BEGIN { printf "%.0f%%", 100 * (c + d) / (a + b) }')"
done
echo "(kept: busy images/s over idle images/s, means of the two rounds)"
