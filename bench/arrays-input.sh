#!/usr/bin/env bash
# NumPy arrays as graphrun's input (--data arrays:...), in one run:
#
#   1. the input alone: Fashion-MNIST's train split as an .npz (x (60000,
#      28, 28, 1) float32 / 255, y uint8, test/tools/graphrun/Inputs/
#      fashion_mnist_arrays.py) and as x.npy + y.npy, through our pipeline
#      (bench/arrays-input: TrainingJob's shuffle, repeat, map, batch 256,
#      prefetch 2) in memory and memory-mapped (--in-memory-bytes 0, 1 map
#      thread as graphrun defaults to for arrays, and 2), against tf.data
#      (from_tensor_slices, shuffle(5000), batch 256, prefetch AUTOTUNE; TF
#      2.21, 2 threads) and PyTorch's DataLoader (TensorDataset, batch 256,
#      shuffle, num_workers 2 persistent and 0; set_num_threads(2)) on the
#      same file, REPS interleaved repetitions of BATCHES batches each;
#      prints examples/s (median of the repetitions) and ours / the faster
#      peer;
#   2. the seed CNN end to end (global batch 256, 2 CPU replicas, one
#      epoch): the step split's input-wait share with --data arrays:train.npz
#      against --data fashion_mnist (the IDX files), interleaved;
#   3. a memory-mapped x.npy of about 10 GB (BIG_ROWS rows of 28x28x1
#      float32, Fashion-MNIST tiled) and its y.npy: the input alone on it,
#      then the seed CNN trained on it for BIG_STEPS steps under
#      /usr/bin/time -v: peak resident set (goal < 2 GB; the anonymous and
#      file-backed parts sampled from /proc apart) and input-wait share,
#      with graphrun's default map thread and with --decode-threads 2, then
#      once more with x.npy's pages dropped from the page cache first
#      (posix_fadvise DONTNEED on that file alone), as for a file larger
#      than the memory.
#      Skipped when the disk has less than 25 GB free; the files are
#      deleted at the end, however the script ends.
#
# Before each timed row it waits until no test suite or build runs
# (pgrep -f 'lit |ctest|ninja', every 30 s) and says how long it waited;
# a row during which one started is measured again.
# Every process runs with glibc's malloc kept from returning big buffers
# (MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ at 4 GiB) and
# OMP_NUM_THREADS=2 (../shared/BUILD-NOTES.md).
#
#   bench/arrays-input.sh [build-dir]
#
#   REPS        repetitions of each input-alone row (default 3)
#   BATCHES     batches a repetition takes (default 5000: 1.28 M examples,
#               21 epochs of Fashion-MNIST)
#   BIG_ROWS    rows of the large x.npy (default 3200000: 10.0 GB)
#   BIG_STEPS   training steps on it (default 300)
#   WORK        where the files go (default build-dir/arrays-bench)
#   TF_PYTHON   a python with tensorflow 2.21 (default: bench/keras-venv.sh's,
#               made when missing); without one the tf.data rows are skipped
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
reps="${REPS:-3}"
batches="${BATCHES:-5000}"
big_rows="${BIG_ROWS:-3200000}"
big_steps="${BIG_STEPS:-300}"
work="${WORK:-$build/arrays-bench}"
py=/usr/bin/python3 # Debian's: numpy and python3-torch
peers="$root/bench/arrays_input_peers.py"
bin="$build/bin"
export PYTHONDONTWRITEBYTECODE=1
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
export OMP_NUM_THREADS=2 TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$work"
big="$work/big"
trap 'rm -rf "$big"' EXIT

busy() { pgrep -f 'lit |ctest|ninja' >/dev/null; }
wait_idle() { # what is about to be timed
  local waited=0
  while busy; do
    if ((waited == 0)); then
      echo "waiting for the machine to be idle before $1: $(pgrep -af 'lit |ctest|ninja' | head -1 | cut -c1-100)"
    fi
    sleep 30
    waited=$((waited + 30))
  done
  if ((waited > 0)) || [[ $1 != "a row" ]]; then
    echo "idle before $1 (waited ${waited} s); load $(cut -d' ' -f1-3 /proc/loadavg)"
  fi
}
# Runs "$@" once nothing else runs, and again when a build or a test suite
# has started by the time it ends (its figures would be that run's too).
measured() {
  local out
  while :; do
    wait_idle "a row" >&2
    out=$("$@" 2>&1) || { printf '%s\n' "$out"; return 1; }
    busy || break
    echo "(a build or test started during: $* -- measured again)" >&2
  done
  printf '%s\n' "$out"
}

wait_idle "the build"
ninja -C "$build" bin/arrays-input >&2
for tool in graph-import graphc graphrun arrays-input; do
  [[ -x "$bin/$tool" ]] || { echo "no $bin/$tool: build it first" >&2; exit 1; }
done

tf_python="${TF_PYTHON:-}"
if [[ -z "$tf_python" ]]; then
  tf_python=$("$root/bench/keras-venv.sh" 2>"$work/venv.log") || tf_python=""
fi
have_tf=0
if [[ -n "$tf_python" ]] && "$tf_python" -c 'import tensorflow' 2>/dev/null; then
  have_tf=1
else
  echo "no TensorFlow (bench/keras-venv.sh makes one): tf.data rows skipped"
fi

echo "== machine and commit"
echo "host: $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem:/ { print $2 }') GiB"
lscpu | grep -E '^(Model name|Flags):'
echo "commit: $(git -C "$root" rev-parse --short HEAD) ($(git -C "$root" status --porcelain | wc -l) paths changed in the work tree)"
echo "tensorflow: $([[ $have_tf == 1 ]] && "$tf_python" -c 'import tensorflow as tf; print(tf.__version__)' || echo none); torch: $("$py" -c 'import torch; print(torch.__version__)')"

echo "== files"
"$py" "$root/test/tools/graphrun/Inputs/fashion_mnist_arrays.py" "$work/fm"
"$py" "$peers" npy "$work/fm/train.npz" "$work/fm"
npz="$work/fm/train.npz"
pair="$work/fm/x.npy,$work/fm/y.npy"
ls -l "$npz" "$work/fm/x.npy" "$work/fm/y.npy"
cat "$npz" "$work/fm/x.npy" >/dev/null # no row pays for the disk

# Each row's lines go to $work/rows.txt as "label<TAB>examples/s".
rows="$work/rows.txt"
: >"$rows"
rate() { sed -n 's/.* \([0-9][0-9]*\) examples\/s.*/\1/p'; }
row() { # label, command...
  local label="$1" line
  shift
  line=$(measured "$@" | grep -E '^(ours|tf\.data|torch)|Error|error' | tail -1 || true)
  echo "$label | $line"
  printf '%s\t%s\n' "$label" "$(echo "$line" | rate)" >>"$rows"
}

echo "== the input alone: $reps repetitions of $batches batches of 256, interleaved"
wait_idle "the input-alone rows"
for ((r = 1; r <= reps; ++r)); do
  echo "-- repetition $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
  row "ours, in memory (.npz)" "$bin/arrays-input" --data "arrays:$npz" --batches "$batches"
  row "ours, mapped .npy, 2 map threads" "$bin/arrays-input" --data "arrays:$pair" --batches "$batches" --in-memory-bytes 0 --threads 2
  row "ours, mapped .npy, 1 map thread" "$bin/arrays-input" --data "arrays:$pair" --batches "$batches" --in-memory-bytes 0 --threads 1
  if [[ $have_tf == 1 ]]; then
    row "tf.data, 2 threads" "$tf_python" "$peers" tf "$npz" --batches "$batches"
  fi
  row "torch DataLoader, num_workers=2" "$py" "$peers" torch "$npz" --batches "$batches" --workers 2
  row "torch DataLoader, num_workers=0" "$py" "$peers" torch "$npz" --batches "$batches" --workers 0
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$py" - "$rows" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    label, value = line.rstrip("\n").split("\t")
    if value:
        rates.setdefault(label, []).append(float(value))
print(f"| batch 256, {len(next(iter(rates.values())))} repetitions | examples/s (median) | min | max |")
print("| --- | --- | --- | --- |")
for label, values in rates.items():
    print(f"| {label} | {statistics.median(values):,.0f} | {min(values):,.0f} | {max(values):,.0f} |")
peers = {k: statistics.median(v) for k, v in rates.items() if not k.startswith("ours")}
best = max(peers, key=peers.get)
print(f"faster peer: {best}, {peers[best]:,.0f} examples/s")
for label, values in rates.items():
    if label.startswith("ours"):
        print(f"{label} / faster peer: {statistics.median(values) / peers[best]:.2f}x")
PY
echo "-- the fixture's Fortran-order train_x.npy (np.asfortranarray): converted to C order on the way"
measured "$bin/arrays-input" --data "arrays:$work/fm/train_x.npy,$work/fm/train_y.npy" --batches 1000 | grep -E '^(open|ours)'
measured "$bin/arrays-input" --data "arrays:$work/fm/train_x.npy,$work/fm/train_y.npy" --batches 200 --in-memory-bytes 0 --threads 1 | grep -E '^ours'

echo "== the seed CNN end to end: 2 CPU replicas, global batch 256, one epoch"
"$bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$bin/graphc" "$work/m.mlir" --replicas 2 -o "$work/m.plan"
train() { # label, graphrun flags...
  local label="$1" out
  shift
  out=$(measured "$bin/graphrun" "$work/m.plan" --cpus 2 --no-progress "$@")
  echo "$label | $(echo "$out" | grep -E '^(step time|images/sec)' | tr '\n' ' ')"
  echo "$label | $(echo "$out" | grep '^step split')"
}
wait_idle "the end-to-end rows"
for r in 1 2; do
  echo "-- round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
  train "--data fashion_mnist (IDX, in memory)" --data fashion_mnist --epochs 1
  train "--data arrays:train.npz" --data "arrays:$npz" --epochs 1
done

echo "== a memory-mapped x.npy of $big_rows rows ($((big_rows * 3136 / 1000000)) MB)"
free_gb=$(df -BG --output=avail "$work" | tail -1 | tr -dc '0-9')
echo "free disk at $work: ${free_gb} GB"
if ((free_gb < 25)); then
  echo "skipped: less than 25 GB free"
  exit 0
fi
"$py" "$peers" big "$big" "$big_rows"
echo "in the page cache: $(fincore --noheadings --output RES "$big/x.npy" 2>/dev/null || echo '?') of x.npy"
# Drops x.npy's pages from the page cache (posix_fadvise DONTNEED on that
# file alone): a run then reads it from the disk, as a file larger than the
# memory always is.
drop_cache() {
  "$py" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$big/x.npy"
}
cached() { echo "x.npy in the page cache: $(fincore --noheadings --output RES "$big/x.npy" 2>/dev/null || echo '?')"; }
disk=$(basename "$(findmnt -no SOURCE -T "$work")")
parent=$(lsblk -no PKNAME "/dev/$disk" 2>/dev/null | head -1 || true)
disk=${parent:-$disk}
echo "read-ahead of $disk: $(cat "/sys/block/$disk/queue/read_ahead_kb" 2>/dev/null || echo '?') KiB (a fault on a mapping reads about that much around it)"
wait_idle "the large-file rows"
for threads in 2 1; do
  measured "$bin/arrays-input" --data "arrays:$big/x.npy,$big/y.npy" --batches "$batches" --threads "$threads" | grep -E '^(open|ours)'
done
drop_cache
cached
echo "-- the same, 1 map thread, 500 batches, x.npy read from the disk (cold page cache)"
measured "$bin/arrays-input" --data "arrays:$big/x.npy,$big/y.npy" --batches 500 --threads 1 | grep -E '^ours'
cached
# graphrun under /usr/bin/time -v, its RssAnon and RssFile sampled every
# 0.2 s: the peak resident set, and what of it is the mapping's file pages.
sampled_train() { # graphrun flags...
  local pid child anon=0 file=0 a f
  /usr/bin/time -v -o "$work/time.txt" "$bin/graphrun" "$work/m.plan" --cpus 2 \
    --no-progress "$@" >"$work/train.txt" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    child=$(pgrep -P "$pid" | head -1 || true)
    if [[ -n "$child" && -r /proc/$child/status ]]; then
      a=$(awk '/^RssAnon:/ { print $2 }' "/proc/$child/status" 2>/dev/null || echo 0)
      f=$(awk '/^RssFile:/ { print $2 }' "/proc/$child/status" 2>/dev/null || echo 0)
      ((${a:-0} > anon)) && anon=${a:-0}
      ((${f:-0} > file)) && file=${f:-0}
    fi
    sleep 0.2
  done
  wait "$pid" || { cat "$work/train.txt"; return 1; }
  grep -E '^(step time|images/sec|step split)' "$work/train.txt"
  grep -E 'Maximum resident set size|Elapsed \(wall' "$work/time.txt" | sed 's/^\s*//'
  echo "sampled peaks: RssAnon $((anon / 1024)) MiB, RssFile $((file / 1024)) MiB"
}
big_train() { # label, graphrun flags...
  local label="$1"
  shift
  measured sampled_train "$@" | sed "s/^/$label | /"
}
big_train "--data arrays:x.npy,y.npy (mapped), $big_steps steps" \
  --data "arrays:$big/x.npy,$big/y.npy" --steps "$big_steps"
big_train "--data arrays:x.npy,y.npy (mapped), --decode-threads 2, $big_steps steps" \
  --data "arrays:$big/x.npy,$big/y.npy" --steps "$big_steps" --decode-threads 2
big_train "--data fashion_mnist, $big_steps steps (for scale)" \
  --data fashion_mnist --steps "$big_steps"
drop_cache
cached
big_train "--data arrays:x.npy,y.npy (mapped), cold page cache, $big_steps steps" \
  --data "arrays:$big/x.npy,$big/y.npy" --steps "$big_steps"
cached
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
