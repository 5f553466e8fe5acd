#!/usr/bin/env bash
# The seed's VGG16 transfer-learning step on CPU, ours against PyTorch's, in
# one run: examples/vgg16_oct.json (VGG16 without its top, blocks 1-4
# frozen, Flatten + Dense(4, softmax); the last 4 weighted layers train),
# input 224x224x3, global batch 32, Adam 0.001, synthetic data, 2 threads
# for both. Ours runs one replica with a 2-thread pool and two replicas of
# one thread each; PyTorch (Debian's python3-torch) runs the same layers by
# hand, channels_last, set_num_threads(2), glibc's malloc kept from
# returning its buffers (BUILD-NOTES.md: what its best users do). Two
# rounds, alternating; the load average is printed before and after, since
# it moves every figure.
#
#   bench/vgg16-transfer.sh [steps] [build-dir]
#
# A step is seconds here: the default of 4 timed steps after 1 warm-up
# takes about 3 minutes for the whole table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-4}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$root/bench/pytorch-peer.sh"

"$build/bin/graph-import" "$root/examples/vgg16_oct.json" --batch-size 32 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

ours() { # replicas -> "<seconds> <images/s>"
  echo "== ours: graphrun --backend cpu, $1 replica(s), 2 threads, 1 warm-up + $steps timed steps" >&2
  OMP_NUM_THREADS=2 "$build/bin/graphrun" "$work/m.plan" --data synthetic \
    --steps "$((steps + 1))" --cpus "$1" --warmup 1 --log-every 1000 \
    --no-progress 2>&1 | tee -a /dev/stderr |
    awk '/^step time:/ { s = $4 } /^images\/sec:/ { i = $2 } END { print s, i }'
}
peer() {
  echo "== PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), 2 threads, channels_last, tuned malloc, 1 warm-up + $steps timed steps" >&2
  MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
    OMP_NUM_THREADS=2 /usr/bin/python3 "$root/bench/pytorch_vgg16_transfer.py" \
    --steps "$steps" --warmup 1 | tee -a /dev/stderr
}

echo "host: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
for round in 1 2; do
  p=$(peer)
  o1=$(ours 1)
  o2=$(ours 2)
  rows+=("$round:PyTorch 1.13 (2 threads, channels_last):$p"
    "$round:graphrun cpu, 1 replica x 2 threads:$o1"
    "$round:graphrun cpu, 2 replicas x 1 thread:$o2")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
printf '%-6s %-42s %10s %10s %8s\n' round "" "step (s)" "images/s" "vs peer"
for row in "${rows[@]}"; do
  IFS=: read -r round name figures <<<"$row"
  read -r seconds images <<<"$figures"
  peer_images=$(printf '%s\n' "${rows[@]}" | awk -F: -v r="$round" '$1 == r && $2 ~ /^PyTorch/ { split($3, f, " "); print f[2] }')
  printf '%-6s %-42s %10s %10s %8s\n' "$round" "$name" "$seconds" "$images" \
    "$(awk -v a="$images" -v b="$peer_images" 'BEGIN { printf "%.2f", a / b }')"
done
