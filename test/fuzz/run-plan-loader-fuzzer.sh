#!/usr/bin/env bash
# Builds the plan loader's libFuzzer target with clang (ASan + UBSan) and runs
# it for SECONDS (default 60) from a seed corpus of plans graphc compiles.
#
#   test/fuzz/run-plan-loader-fuzzer.sh [seconds] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:-60}"
build="${2:-$root/build}"
out="$build/fuzz"
mkdir -p "$out/corpus"

clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
  -I"$root" -I"$build" \
  "$root/test/fuzz/PlanLoaderFuzzer.cpp" "$root/runtime/plan/PlanLoader.cpp" \
  -o "$out/plan-loader-fuzzer"

for spec in fashion_mnist_cnn:8 mgpu_mlp:8 residual_concat:4; do
  model=${spec%%:*} batch=${spec##*:}
  "$build/bin/graph-import" "$root/examples/$model.json" --batch-size "$batch" -o "$out/$model.mlir"
  "$build/bin/graphc" "$out/$model.mlir" --replicas 1,2 -o "$out/corpus/$model.plan"
done

"$out/plan-loader-fuzzer" "$out/corpus" -max_total_time="$seconds" -max_len=262144 \
  -print_final_stats=1 2>&1 | tail -15
