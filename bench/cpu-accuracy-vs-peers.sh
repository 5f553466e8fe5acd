#!/usr/bin/env bash
# Test accuracy and time to accuracy on CPU, ours against PyTorch eager and
# TensorFlow/Keras `fit`, one after the other on the same machine: the seed
# Fashion-MNIST CNN on the real data (the IDX files in
# /usr/share/datasets/fashion-mnist), global batch 256, Adam 0.001, 2 threads
# each, the test set evaluated after every epoch. Prints, per epoch, each
# one's test accuracy and training seconds so far; the training time at which
# each first reached the seed document's reference accuracy (0.8965); and
# each one's images/s.
#
#   bench/cpu-accuracy-vs-peers.sh [epochs] [seed] [build-dir]
#
#   ours     graphrun, cpu backend, 2 replicas x 1 thread (the batch split,
#            gradients all-reduced), as bench/cpu-time-to-accuracy.sh runs it
#   pytorch  bench/pytorch_fashion_accuracy.py on Debian's python3-torch
#            (installed when missing), torch.set_num_threads(2), channels_last,
#            glibc malloc kept from returning big buffers
#            (MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_, see
#            ../shared/BUILD-NOTES.md), Keras's initialisers and Adam epsilon
#   keras    bench/keras_fashion_cnn.py with tensorflow-cpu from PyPI in the
#            virtualenv bench/keras-venv.sh makes (created when missing, under
#            build/ unless KERAS_VENV says where), 2 intra-op threads and
#            KERAS_INTER_OP (default 1) inter-op threads
#
# All three take 234 steps of 256 an epoch (the last partial batch dropped;
# graphrun streams the epochs through a 5000-example shuffle buffer, the
# peers shuffle the whole training set every epoch).
#
# Times are training time: wall-clock seconds from the start of the first
# training step (Keras: on_train_begin, so its first step's tracing counts,
# as PyTorch's and ours first-step costs do) to the end of an epoch's last
# step, with the time spent in the per-epoch evaluations left out, the same
# way for all three. Ours is timed from graphrun's log lines, stamped as they
# arrive: the line graphrun prints after step 234*k ends training epoch k,
# and the "eval at step" line that follows ends its evaluation; the start is
# step 1's line less step 1's own duration (from --metrics). images/s is all
# the training images over those training seconds.
#
# Evaluation: all three evaluate all 10000 test examples (graphrun pads its
# last batch and weighs the padding zero); graphrun says how many it
# evaluated, and the table notes it should that ever be fewer.
#
# Run it on an idle machine. PyTorch's 2 OpenMP threads spin at their
# barriers, and a busy core costs it far more than the others (seen with a
# build running beside it: PyTorch 600-900 images/s, 2,500-2,800 with
# OMP_WAIT_POLICY=PASSIVE, which an idle machine has no need of).
#
#   TARGET=0.8965          the reference accuracy
#   KEEP=dir               also keep each run's raw output in dir
#   KERAS_INTER_OP=n       Keras's inter-op threads (default 1)
#   OURS_FLAGS="..."       more graphrun flags (e.g. --shuffle-buffer 60000)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
epochs="${1:-10}"
seed="${2:-0}"
build="${3:-$root/build}"
target="${TARGET:-0.8965}"
inter_op="${KERAS_INTER_OP:-1}"
batch=256
per_epoch=$((60000 / batch))
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$root/bench/pytorch-peer.sh"
keras_python="$("$root/bench/keras-venv.sh")"

echo "== $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $epochs epochs of $per_epoch steps, batch $batch, seed $seed"

# (a) ours. Each stdout line is stamped with the time it arrived.
echo "== ours: graphrun --backend cpu --cpus 2 (2 replicas x 1 thread)"
"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size "$batch" -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 2 -o "$work/m.plan"
"$build/bin/graphrun" "$work/m.plan" --backend cpu --cpus 2 --data fashion_mnist \
  --seed "$seed" --epochs "$epochs" --eval-every "$per_epoch" \
  --log-every "$per_epoch" --no-progress --metrics "$work/ours.metrics.jsonl" ${OURS_FLAGS:-} |
  while IFS= read -r line; do
    printf '%s %s\n' "$EPOCHREALTIME" "$line"
    printf '%s\n' "$line" >&2
  done >"$work/ours.log"
/usr/bin/python3 - "$work/ours.log" "$work/ours.metrics.jsonl" "$per_epoch" "$batch" \
  >"$work/ours.jsonl" <<'PY'
import json, re, sys
log, metrics, per_epoch, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
step_seconds = {r["step"]: r["seconds"] for r in map(json.loads, open(metrics)) if not r.get("eval")}
step_done, eval_done, evals = {}, {}, {}
for entry in open(log):
    stamp, _, line = entry.rstrip("\n").partition(" ")
    if m := re.match(r"loss = \S+, step = (\d+)", line):
        step_done[int(m[1])] = float(stamp)
    elif m := re.match(r"eval at step (\d+): loss = (\S+), accuracy = ([0-9.]+) \((\d+) of", line):
        eval_done[int(m[1])] = float(stamp)
        evals[int(m[1])] = (float(m[2].rstrip(",")), float(m[3]), int(m[4]))
start = step_done[1] - step_seconds[1]
eval_seconds, last_train = 0.0, 0.0
for step in sorted(evals):
    train_so_far = step_done[step] - start - eval_seconds
    eval_seconds += eval_done[step] - step_done[step]
    loss, accuracy, examples = evals[step]
    print(json.dumps({
        "framework": "ours", "epoch": step // per_epoch,
        "test_accuracy": accuracy, "test_loss": loss, "test_examples": examples,
        "train_seconds_so_far": round(train_so_far, 3),
        "wall_seconds_so_far": round(eval_done[step] - start, 3),
        "images_per_sec": round(per_epoch * batch / (train_so_far - last_train), 1)}))
    last_train = train_so_far
PY
cat "$work/ours.jsonl"

# (b) PyTorch eager.
echo "== pytorch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), 2 threads, channels_last"
MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2 \
  /usr/bin/python3 "$root/bench/pytorch_fashion_accuracy.py" --epochs "$epochs" --seed "$seed" \
  --batch "$batch" --threads 2 | tee "$work/pytorch.jsonl"

# (c) Keras fit.
echo "== keras: $("$keras_python" -c 'import importlib.metadata as m; print("tensorflow-cpu", m.version("tensorflow-cpu"), "keras", m.version("keras"))'), 2 intra-op / $inter_op inter-op threads"
"$keras_python" "$root/bench/keras_fashion_cnn.py" --epochs "$epochs" --seed "$seed" \
  --batch "$batch" --intra-op 2 --inter-op "$inter_op" | tee "$work/keras.jsonl"

if [[ -n "${KEEP:-}" ]]; then
  mkdir -p "$KEEP"
  cp "$work"/*.jsonl "$work/ours.log" "$KEEP/"
fi

echo
/usr/bin/python3 - "$work" "$target" "$per_epoch" "$batch" <<'PY'
import json, os, sys
work, target, per_epoch, batch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
names = {"ours": "ours (graphrun)", "pytorch": "PyTorch eager", "keras": "Keras fit"}
runs = {k: [json.loads(l) for l in open(os.path.join(work, k + ".jsonl")) if l.startswith("{")]
        for k in names}
epochs = max(len(r) for r in runs.values())
print("test accuracy after each epoch (training seconds so far, evaluation excluded)")
print("%5s" % "epoch" + "".join("%24s" % names[k] for k in names))
for e in range(epochs):
    row = "%5d" % (e + 1)
    for k in names:
        r = runs[k][e] if e < len(runs[k]) else None
        row += "%24s" % ("%.4f (%7.1f s)" % (r["test_accuracy"], r["train_seconds_so_far"]) if r else "-")
    print(row)
print()
print("%-34s" % "" + "".join("%18s" % k for k in names))
row = "%-34s" % ("first at >= %.4f: training s" % target)
row2 = "%-34s" % "    (epoch)"
for k in names:
    hit = next((r for r in runs[k] if r["test_accuracy"] >= target), None)
    row += "%18s" % ("%.1f" % hit["train_seconds_so_far"] if hit else "not reached")
    row2 += "%18s" % (str(hit["epoch"]) if hit else "-")
print(row)
print(row2)
row = "%-34s" % "best test accuracy (epoch)"
for k in names:
    best = max(runs[k], key=lambda r: r["test_accuracy"]) if runs[k] else None
    row += "%18s" % ("%.4f (%d)" % (best["test_accuracy"], best["epoch"]) if best else "-")
print(row)
row = "%-34s" % "images/s (all epochs' training)"
for k in names:
    last = runs[k][-1] if runs[k] else None
    row += "%18s" % ("%.0f" % (last["epoch"] * per_epoch * batch / last["train_seconds_so_far"]) if last else "-")
print(row)
if epochs > 1:
    row = "%-34s" % "images/s (epochs 2 on)"
    for k in names:
        r = runs[k]
        row += "%18s" % ("%.0f" % ((r[-1]["epoch"] - r[0]["epoch"]) * per_epoch * batch /
                                   (r[-1]["train_seconds_so_far"] - r[0]["train_seconds_so_far"]))
                         if len(r) > 1 else "-")
    print(row)
row = "%-34s" % "training s / with evaluation s"
for k in names:
    last = runs[k][-1] if runs[k] else None
    row += "%18s" % ("%.1f / %.1f" % (last["train_seconds_so_far"], last["wall_seconds_so_far"]) if last else "-")
print(row)
examples = {r.get("test_examples") for r in runs["ours"]} - {None, 10000}
if examples:
    print("(ours evaluated %s of the 10000 test examples, whole batches of %d only; the peers all 10000)"
          % ("/".join(map(str, sorted(examples))), batch))
PY
