#!/usr/bin/env bash
# The README's "run" command: set up, build, then import the seed
# Fashion-MNIST model from real Keras JSON, verify it and print it.
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
