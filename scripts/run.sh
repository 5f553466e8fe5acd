#!/usr/bin/env bash
# The README's "run" command: set up, build, import the seed
# Fashion-MNIST model from real Keras JSON, verify and print it, compile it
# to a training plan, then train it on the real data and evaluate it on the
# test set: on every GPU when there is one (the cuda backend), else on 2 CPU
# replicas (the cpu backend, oneDNN). EPOCHS (default 3) passes over the
# 60000 training images at the global batch 256; STEPS=N trains N steps
# instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPH_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"

model="$build/fashion_mnist_cnn.mlir"
echo "== graph-import examples/fashion_mnist_cnn.json --batch-size 256"
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" \
  --batch-size 256 -o "$model"
echo "== graph-opt (parses and verifies, then prints the model)"
"$build/bin/graph-opt" "$model"

plan="$build/fashion_mnist_cnn.plan"
echo "== graphc (training step, fusion, replication for 1/2/4/8 replicas, lowering)"
"$build/bin/graphc" "$model" -o "$plan"
"$build/bin/graphc" --inspect "$plan"

if [[ -n "${STEPS:-}" ]]; then
  length=(--steps "$STEPS")
else
  length=(--epochs "${EPOCHS:-3}")
fi
if nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null; then
  devices=() # graphrun's default: every GPU
  echo "== graphrun: ${length[*]} on every GPU, real Fashion-MNIST, then the test set"
else
  devices=(--cpus 2)
  echo "== graphrun: ${length[*]} on 2 CPU replicas, real Fashion-MNIST, then the test set"
fi
"$build/bin/graphrun" "$plan" "${devices[@]}" --data fashion_mnist \
  "${length[@]}" --log-every 50 --eval
