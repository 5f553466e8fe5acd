#!/usr/bin/env bash
# tf.keras 2 loads the .h5 graphrun writes: the seed CNN trained 30 steps,
# --save-weights w.h5, then tf_keras (pinned to the bench venv's
# TensorFlow) load_weights + evaluate equals graphrun's --eval within 1e-5.
# Needs the bench venv (bench/keras-venv.sh: tensorflow-cpu from PyPI).
#
#   bench/tf-keras-reads-h5.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/build/bin"
py="$("$root/bench/keras-venv.sh")"
tf="$("$py" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
"$py" -c 'import tf_keras' 2>/dev/null ||
  "$(dirname "$py")/pip" install -q --no-deps "tf_keras==$tf" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin/graph-import" "$root/examples/fashion_mnist_cnn.json" -o "$work/m.mlir"
"$bin/graphc" "$work/m.mlir" -o "$work/m.plan"
"$bin/graphrun" "$work/m.plan" --steps 30 --no-progress --eval \
  --metrics "$work/m.jsonl" --save-weights "$work/w.h5" > /dev/null
TF_CPP_MIN_LOG_LEVEL=3 "$py" "$root/bench/tf_keras_reads_h5.py" "$work/w.h5" \
  "$work/m.jsonl" "$root/examples/fashion_mnist_cnn.json" 2>&1 |
  grep -E "^tf_keras|^ok|Error"
