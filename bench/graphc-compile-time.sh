#!/usr/bin/env bash
# graphc's compile time on the seed models, default flags (programs for 1, 2,
# 4 and 8 replicas). Goals: the Fashion-MNIST CNN under 1 s, VGG16 under 5 s.
# Reports the best of 5 runs of `graphc model.mlir -o model.plan` (the import
# is timed apart) and graphc's own pass timing for the slowest model.
#
#   bench/graphc-compile-time.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

best_of() { # best wall time in seconds of 5 runs of "$@"
  local best=""
  for _ in 1 2 3 4 5; do
    local start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1
    best=$(awk -v s="$start" -v e="$EPOCHREALTIME" -v b="$best" \
      'BEGIN { t = e - s; if (b == "" || t < b) b = t; print b }')
  done
  printf '%.3f' "$best"
}

printf '%-22s %8s %12s %12s %10s\n' model batch import_s graphc_s plan_KiB
for spec in fashion_mnist_cnn:256 vgg16_oct:32 mgpu_mlp:256 residual_concat:64; do
  model=${spec%%:*} batch=${spec##*:}
  mlir="$work/$model.mlir" plan="$work/$model.plan"
  "$build/bin/graph-import" "$root/examples/$model.json" --batch-size "$batch" -o "$mlir"
  ti=$(best_of "$build/bin/graph-import" "$root/examples/$model.json" --batch-size "$batch" -o "$mlir")
  tc=$(best_of "$build/bin/graphc" "$mlir" -o "$plan")
  printf '%-22s %8s %12s %12s %10s\n' "$model" "$batch" "$ti" "$tc" "$(($(stat -c %s "$plan") / 1024))"
done
echo
echo "pass timing, vgg16_oct:"
"$build/bin/graphc" "$work/vgg16_oct.mlir" -o "$work/vgg16_oct.plan" --mlir-timing 2>&1 | head -30
