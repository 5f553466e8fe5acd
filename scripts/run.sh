#!/usr/bin/env bash
# The README's "run" command: set up, build, import the seed
# Fashion-MNIST model from real Keras JSON, verify and print it, compile it
# to a training plan, then train it on 2 CPU replicas on the real data and
# evaluate it on the test set. The kernels are still the naive reference
# ones (the oneDNN backend is next), so the run is short: STEPS (default 30)
# steps of the global batch 256.
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

steps="${STEPS:-30}"
echo "== graphrun: $steps steps on 2 CPU replicas, real Fashion-MNIST, then the test set"
"$build/bin/graphrun" "$plan" --cpus 2 --data fashion_mnist --steps "$steps" \
  --log-every 10 --eval
