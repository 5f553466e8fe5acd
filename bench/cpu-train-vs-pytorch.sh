#!/usr/bin/env bash
# Training throughput on CPU, ours against PyTorch's and TensorFlow's, in one
# run: the seed Fashion-MNIST CNN, global batch 256, Adam 0.001, synthetic
# data, 2 threads for everyone. Two rounds; within a round every
# configuration runs once, one after the other, so a change of load hits
# all of them alike. lscpu's model and flags come first (AVX-512 or only
# AVX2 decides oneDNN's kernels and ours), and the load average before each
# round: take figures from an idle machine.
#
#   bench/cpu-train-vs-pytorch.sh [steps] [build-dir]
#
# Rows:
#   graphrun cpu, 1 replica x 2 threads and 2 replicas x 1 thread (the batch
#     split, gradients all-reduced);
#   PyTorch 1.13 (Debian's python3-torch), set_num_threads(2), eager,
#     NCHW and channels_last -- the tuned peer -- and once with the default
#     environment (labelled untuned: glibc's malloc returns and re-faults
#     its large buffers every step);
#   TensorFlow 2.21 (tensorflow-cpu from PyPI, bench/keras-venv.sh), a
#     tf.function train step, with and without XLA (jit_compile); skipped
#     with a message when the venv cannot be made (no network).
# The allocator is taken out of the comparison: every tuned row, ours
# included, runs glibc's malloc with MALLOC_MMAP_THRESHOLD_ and
# MALLOC_TRIM_THRESHOLD_ at 4 GiB (../shared/BUILD-NOTES.md), so no side
# returns memory to the kernel between steps. (Ours allocates nothing in the
# steady-state step: its arena is planned.)
#
# Last, the step's compute floor (bench/cpu-kernels.cpp --floor: every
# conv/dense primitive of the step in oneDNN's best layout, back to back)
# and our efficiency: floor / our step time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-30}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
batch=256

lscpu | grep -E '^(Model name|Flags):' | sed 's/  */ /g'
"$root/bench/pytorch-peer.sh"
tf_python=""
if tf_python=$("$root/bench/keras-venv.sh" 2>"$work/venv.log"); then :; else
  echo "TensorFlow peer skipped: bench/keras-venv.sh failed ($(tail -1 "$work/venv.log"))"
  tf_python=""
fi

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size $batch -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)
untuned=(env OMP_NUM_THREADS=2)

ours() { # replicas
  "${tuned[@]}" "$build/bin/graphrun" "$work/m.plan" --data synthetic \
    --steps "$((steps + 5))" --cpus "$1" --backend cpu --warmup 5 \
    --log-every 0 --no-progress 2>&1 | awk '/^images\/sec:/ { print $2 }'
}
torch_peer() { # env-array-name, flags...
  local -n envs=$1
  shift
  "${envs[@]}" /usr/bin/python3 "$root/bench/pytorch_fashion_cnn.py" \
    --steps "$steps" --warmup 5 "$@"
}
tf_peer() { # flags...
  if [[ -z "$tf_python" ]]; then
    echo "-"
    return
  fi
  "${tuned[@]}" "$tf_python" "$root/bench/keras_fashion_throughput.py" \
    --steps "$steps" --warmup 5 "$@" 2>/dev/null | tail -1
}

labels=(
  "graphrun cpu, 1 replica x 2 threads"
  "graphrun cpu, 2 replicas x 1 thread"
  "PyTorch eager, NCHW"
  "PyTorch eager, channels_last"
  "PyTorch eager, NCHW, untuned malloc"
  "TensorFlow tf.function"
  "TensorFlow tf.function, XLA"
)
declare -A rate
for round in 1 2; do
  echo "round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  rate[$round,0]=$(ours 1)
  rate[$round,1]=$(ours 2)
  rate[$round,2]=$(torch_peer tuned)
  rate[$round,3]=$(torch_peer tuned --channels-last)
  rate[$round,4]=$(torch_peer untuned)
  rate[$round,5]=$(tf_peer)
  rate[$round,6]=$(tf_peer --jit)
done
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The ratios are against the faster tuned PyTorch row of the same round.
echo
printf '%-38s %10s %8s %10s %8s\n' "seed CNN, batch $batch, $steps steps" \
  "round 1" "ratio" "round 2" "ratio"
for round in 1 2; do
  best[$round]=$(awk -v a="${rate[$round,2]}" -v b="${rate[$round,3]}" \
    'BEGIN { print (a > b ? a : b) }')
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-") print "-"; else printf "%.2f", a / b }'; }
for i in "${!labels[@]}"; do
  printf '%-38s %10s %8s %10s %8s\n' "${labels[$i]}" \
    "${rate[1,$i]}" "$(ratio "${rate[1,$i]}" "${best[1]}")" \
    "${rate[2,$i]}" "$(ratio "${rate[2,$i]}" "${best[2]}")"
done
echo "(images/s; ratio: against the faster tuned PyTorch row of its round)"

echo
"${tuned[@]}" "$build/bin/cpu-kernels" "$work/m.plan" --floor --reps 20 >"$work/floor.txt"
floor_ms=$(awk '/^floor / { print $2 }' "$work/floor.txt")
echo "compute floor: $floor_ms ms a step (bench/cpu-kernels --floor: the step's conv/dense"
echo "primitives in oneDNN's best layout, the faster of 2 threads x 256 and 1 thread x 128)"
for i in 0 1; do
  for round in 1 2; do
    awk -v r="${rate[$round,$i]}" -v f="$floor_ms" -v b=$batch -v l="${labels[$i]}" \
      -v n=$round 'BEGIN { ms = b / r * 1000;
        printf "%-38s round %d: step %.2f ms, efficiency %.0f%% of the floor\n", l, n, ms, 100 * f / ms }'
  done
done
