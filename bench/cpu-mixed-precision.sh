#!/usr/bin/env bash
# The seed CNN under Keras' mixed_bfloat16 (or mixed_float16) against
# float32 on the cpu backend: test accuracy after every epoch (mean of S seeds, the goal being
# within 0.5 points of float32 at every epoch), the median step time and
# the arena each plan needs.
#
#   bench/cpu-mixed-precision.sh [epochs] [seeds] [build-dir] [policy]
#
# policy: mixed_bfloat16 (default) or mixed_float16, which trains with
# Keras' dynamic loss scaling (the summary counts the steps it skipped and
# gives the final scale).
# One plan compiled twice from examples/fashion_mnist_cnn.json (global batch
# 256): graphc --precision float32 and --precision mixed_bfloat16. Trained
# on real Fashion-MNIST as NumPy arrays, evaluated on its test set as Keras'
# validation_data at every epoch's end, 1 replica x 2 threads, the two
# precisions alternating so a change of load hits both. Until the cpu
# backend has oneDNN bf16 kernels, a bf16 plan runs each op in float32 on
# widened copies and rounds it (runtime/core/ReducedPrecision.h): the
# numerics of bfloat16, not its speed, and the step time says what that
# costs. Prints lscpu's model and flags and the load average first (the
# machine is shared: take figures from an idle one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
epochs="${1:-3}"
seeds="${2:-3}"
build="${3:-$root/build}"
policy="${4:-mixed_bfloat16}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3 # NumPy

echo "machine: $(nproc) cores"
lscpu | grep -E '^(Model name|Flags):' | sed 's/  */ /g'
echo "load before: $(uptime | sed 's/.*load average/load average/')"

"$python" "$root/test/tools/graphrun/Inputs/fashion_mnist_arrays.py" \
  "$work/arrays" >/dev/null
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/cnn.mlir"
for precision in float32 "$policy"; do
  "$build/bin/graphc" "$work/cnn.mlir" --replicas 1 --precision "$precision" -o "$work/$precision.plan"
  echo "$precision arena: $("$build/bin/graphc" --inspect "$work/$precision.plan" |
    awk '/^program train_x1/ { p = 1 } p && /arenas:/ { sub(/^ *arenas: /, ""); print; exit }')"
done

tuned=(env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2)
for seed in $(seq 1 "$seeds"); do
  for precision in float32 "$policy"; do
    out="$work/$precision.$seed"
    mkdir -p "$out"
    "${tuned[@]}" "$build/bin/graphrun" "$work/$precision.plan" --backend cpu \
      --cpus 1 --data "arrays:$work/arrays/train.npz" \
      --validation-data "arrays:$work/arrays/test.npz" --epochs "$epochs" \
      --seed "$seed" --log-every 1 --no-progress --metrics "$out/m.jsonl" \
      --csv-log "$out/epochs.csv" >"$out/log"
  done
done

echo "$policy ran: $(grep -o 'precision [^)]*)' "$work/$policy.1/log" | head -1)"
"$python" - "$work" "$seeds" "$policy" <<'PY'
import csv, json, sys
import numpy as np
work, seeds, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
acc, step, skips = {}, {}, []
for precision in ("float32", policy):
    runs = []
    times = []
    for seed in range(1, seeds + 1):
        with open(f"{work}/{precision}.{seed}/epochs.csv") as f:
            runs.append([float(r["val_accuracy"]) for r in csv.DictReader(f)])
        with open(f"{work}/{precision}.{seed}/m.jsonl") as f:
            for line in f:
                r = json.loads(line)
                if "seconds" in r and not r.get("eval") and not r.get("validation"):
                    times.append(r["seconds"])
        if precision == "mixed_float16":
            with open(f"{work}/{precision}.{seed}/m.jsonl") as f:
                scales = [json.loads(l).get("loss_scale") for l in f]
            scales = [s for s in scales if s is not None]
            halved = sum(1 for a, b in zip([32768.0] + scales, scales) if b < a)
            skips.append((halved, len(scales), scales[-1]))
    acc[precision] = np.array(runs)
    step[precision] = np.median(times) * 1e3
print("test accuracy after each epoch, mean of %d seeds (per seed in brackets):" % seeds)
for e in range(acc["float32"].shape[1]):
    a32, a16 = acc["float32"][:, e], acc[policy][:, e]
    print("  epoch %d: float32 %.4f %s, %s %.4f %s, difference %+.2f points"
          % (e + 1, a32.mean(), np.round(a32, 4).tolist(), policy, a16.mean(),
             np.round(a16, 4).tolist(), 100 * (a16.mean() - a32.mean())))
worst = np.max(np.abs(acc[policy].mean(0) - acc["float32"].mean(0)))
print("largest difference %.2f points: %s" % (100 * worst,
      "within 0.5" if worst <= 0.005 else "NOT within 0.5"))
print("median step: float32 %.1f ms, %s %.1f ms (%.2fx)"
      % (step["float32"], policy, step[policy],
         step[policy] / step["float32"]))
for seed, (halved, steps, last) in enumerate(skips, 1):
    print("seed %d: loss scale halved (step skipped) %d of %d steps, final "
          "scale %g" % (seed, halved, steps, last))
PY
echo "load after: $(uptime | sed 's/.*load average/load average/')"
