#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS (default 600), longer than the
# 25-second lit tests (test/fuzz/*.test) that CI runs, keeping its corpus
# between runs in BUILD/fuzz/corpus-NAME. The targets are built by the main
# build (the graph-fuzzers step; see test/fuzz/CMakeLists.txt).
#
#   test/fuzz/run-fuzzer.sh NAME [seconds] [build-dir]
#
# NAME: keras-importer, plan-loader, numpy-reader, csv-reader, idx-reader,
# jpeg-decoder or safetensors-reader.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
names="keras-importer plan-loader numpy-reader csv-reader idx-reader jpeg-decoder safetensors-reader"
usage="usage: run-fuzzer.sh {${names// /|}} [seconds] [build-dir]"
name="${1:?$usage}"
seconds="${2:-600}"
build="${3:-$root/build}"
out="$build/fuzz"
corpus="$out/corpus-$name"
case "$name" in
keras-importer | plan-loader | numpy-reader | csv-reader | idx-reader | jpeg-decoder | \
  safetensors-reader) ;;
*)
  echo "run-fuzzer.sh: no fuzzer '$name' (one of: $names)" >&2
  exit 2
  ;;
esac
ninja -C "$build" graph-fuzzers graph-import graphc >/dev/null
mkdir -p "$corpus" "$out/artifacts-$name"

seeds=()
flags=()
case "$name" in
keras-importer)
  seeds=("$root/examples" "$root/test/frontends/keras/fixtures")
  flags=(-dict="$root/test/fuzz/keras-importer.dict")
  ;;
plan-loader)
  mkdir -p "$out/seeds-plan-loader"
  for spec in fashion_mnist_cnn:8 mgpu_mlp:8 residual_concat:4; do
    model=${spec%%:*} batch=${spec##*:}
    "$build/bin/graph-import" "$root/examples/$model.json" --batch-size "$batch" \
      -o "$out/seeds-plan-loader/$model.mlir"
    "$build/bin/graphc" "$out/seeds-plan-loader/$model.mlir" --replicas 1,2 \
      -o "$out/seeds-plan-loader/$model.plan"
    rm "$out/seeds-plan-loader/$model.mlir"
  done
  seeds=("$out/seeds-plan-loader")
  flags=(-max_len=262144)
  ;;
*)
  # The file readers: the small valid files of Inputs/make-seeds.py.
  seeds=("$root/test/fuzz/Inputs/$name")
  ;;
esac

"$out/$name-fuzzer" "$corpus" "${seeds[@]}" "${flags[@]}" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$out/artifacts-$name/" -print_final_stats=1 2>&1 | tail -15
