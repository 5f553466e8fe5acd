#!/usr/bin/env bash
# Training throughput on CPU, ours against PyTorch's, one after the other in
# one run: the seed Fashion-MNIST CNN, global batch 256, Adam 0.001,
# synthetic data, 2 threads for both. Ours runs two ways that both use 2
# threads: one replica with a 2-thread pool, and two replicas (the batch
# split, gradients all-reduced) of one thread each. Prints images/s for each
# and the ratios.
#
#   bench/cpu-train-vs-pytorch.sh [steps] [backend] [build-dir]
#
# PyTorch comes from Debian's python3-torch (CPU build of 1.13); the script
# installs it when missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-20}"
backend="${2:-cpu}"
build="${3:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "installing python3-torch (Debian) for the comparison"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

ours() { # replicas
  echo "== ours: graphrun --backend $backend, $1 replica(s), 2 threads, 3 warm-up + $steps timed steps" >&2
  OMP_NUM_THREADS=2 "$build/bin/graphrun" "$work/m.plan" --data synthetic \
    --steps "$((steps + 3))" --cpus "$1" --backend "$backend" --warmup 3 \
    --log-every 1000 --no-progress 2>&1 | tee -a /dev/stderr |
    awk '/^images\/sec:/ { print $2 }'
}
ours1=$(ours 1)
ours2=$(ours 2)

echo "== PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), 2 threads, 3 warm-up + $steps timed steps"
peer=$(OMP_NUM_THREADS=2 /usr/bin/python3 "$root/bench/pytorch_fashion_cnn.py" --steps "$steps" --warmup 3)
echo "images/sec: $peer"

echo
printf '%-34s %12s %8s\n' "" "images/s" "ratio"
printf '%-34s %12s %8s\n' "PyTorch eager (2 threads)" "$peer" "1.000"
for row in "1 replica x 2 threads:$ours1" "2 replicas x 1 thread:$ours2"; do
  printf '%-34s %12s %8s\n' "graphrun $backend, ${row%%:*}" "${row##*:}" \
    "$(awk -v a="${row##*:}" -v b="$peer" 'BEGIN { printf "%.3f", a / b }')"
done
