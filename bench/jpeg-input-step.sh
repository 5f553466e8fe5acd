#!/usr/bin/env bash
# Does the image-folder pipeline keep the training step fed? The seed CNN
# (global batch 256, Adam, 2 threads) trained on Fashion-MNIST's train split
# three ways, one after the other in one run: from the IDX files (tensors in
# memory: the step never waits), from the JPEG class folders decoded every
# epoch on the pipeline's threads (scripts/fashion-mnist-jpeg.py makes them),
# and from the folders with --cache (decoded once). Prints the mean step
# time (wall clock, start to start, after 5 warm-up steps) and the JPEG
# rows' ratio to the IDX row. On this 2-core machine decoding shares the
# cores with the step, so it costs what it takes from them.
#
#   bench/jpeg-input-step.sh [steps] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-300}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/scripts/fashion-mnist-jpeg.py" >&2 # idempotent
jpeg="$build/fashion-mnist-jpeg/train"
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1 -o "$work/m.plan"

step_time() { # label, graphrun flags...
  local label="$1"
  shift
  echo "== $label" >&2
  OMP_NUM_THREADS=2 "$build/bin/graphrun" "$work/m.plan" --steps "$steps" \
    --warmup 5 --log-every 0 --no-progress "$@" 2>&1 | tee -a /dev/stderr |
    awk '/^step time:/ { print $4 }'
}
echo "host: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Read every file once so that no row pays for the disk.
find "$jpeg" -name '*.jpeg' -print0 | xargs -0 cat >/dev/null
idx=$(step_time "IDX tensors in memory" --data fashion_mnist)
folder=$(step_time "JPEG folders, decoded every epoch (2 decode threads)" --data "images:$jpeg" --decode-threads 2)
cached=$(step_time "JPEG folders, --cache" --data "images:$jpeg" --cache)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-52s %12s %8s\n' "seed CNN, batch 256, $steps steps" "step (s)" "vs IDX"
for row in "IDX tensors in memory:$idx" "JPEG folders, decoded every epoch:$folder" "JPEG folders, --cache:$cached"; do
  printf '%-52s %12s %8s\n' "${row%%:*}" "${row##*:}" \
    "$(awk -v a="${row##*:}" -v b="$idx" 'BEGIN { printf "%.3f", a / b }')"
done
