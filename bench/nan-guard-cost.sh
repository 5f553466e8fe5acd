#!/usr/bin/env bash
# What the NaN guard costs a CPU step: the seed Fashion-MNIST CNN at global
# batch 256 on 2 replicas of one thread, synthetic data, trained three ways
# one after the other: with the default guard (the step's loss and gradient
# norm), with --no-nan-guard, and with --check-numerics (every variable
# read after every step, the guard as it was). The gradient norm itself is
# computed in every step (it is part of the plan), so its cost is timed
# apart, as a kernel (cpu-kernels' global_norm line) against the step.
#
#   bench/nan-guard-cost.sh [steps] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-100}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 2 -o "$work/m.plan"

run() { # label, flags...
  local label=$1
  shift
  local rate
  rate=$("$build/bin/graphrun" "$work/m.plan" --cpus 2 --data synthetic \
    --steps "$((steps + 5))" --warmup 5 --log-every 0 --no-progress "$@" |
    awk '/^images\/sec:/ { print $2 }')
  printf '%-34s %10s\n' "$label" "$rate"
}
printf '%-34s %10s\n' "graphrun cpu, 2 replicas x 1 thread" "images/s"
run "default guard (loss, grad norm)"
run "--no-nan-guard" --no-nan-guard
run "--check-numerics" --check-numerics
run "default guard, again" 
run "--no-nan-guard, again" --no-nan-guard
echo
echo "the gradient norm as a kernel (one replica's share of the threads):"
"$build/bin/cpu-kernels" "$work/m.plan" --replicas 2 --reps 50 |
  grep -E "^(plan|[0-9]+ +global_norm|total)"
