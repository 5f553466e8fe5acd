"""The peers of bench/arrays-input.sh: NumPy arrays in memory through tf.data
and through a PyTorch DataLoader, and the files the script times.

  KERAS_PYTHON bench/arrays_input_peers.py tf FILE.npz --batches N [--threads 2]
  /usr/bin/python3 bench/arrays_input_peers.py torch FILE.npz --batches N
      [--workers 2]
  /usr/bin/python3 bench/arrays_input_peers.py npy FILE.npz OUT_DIR
      (x.npy and y.npy, C order, from the archive's x and y)
  /usr/bin/python3 bench/arrays_input_peers.py big OUT_DIR ROWS
      (x.npy: ROWS x 28x28x1 float32, Fashion-MNIST's train images / 255
      tiled, written in chunks through numpy.lib.format.open_memmap so the
      writer holds little memory; y.npy: their labels, uint8)

The peers run what a user writes for arrays that fit in memory:

  tf.data.Dataset.from_tensor_slices((x, y)).shuffle(5000).repeat()
      .batch(256, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
  DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True,
             num_workers=W, persistent_workers=W > 0, drop_last=True)

(repeat() so that N batches may span epochs, and drop_last so that every
batch holds 256 rows, as graphrun's pipeline does: it batches after the
repeat and drops only a final partial batch). TensorFlow gets 2 intra-op and
2 inter-op threads and a tf.data thread pool of 2; PyTorch
torch.set_num_threads(2). Each takes N batches and is timed from the first
batch to the last (first batch excluded, as for ours), and prints examples/s,
CPU time (every thread, and the DataLoader's worker processes) per example,
and the peak resident set.
"""
import argparse
import mmap
import os
import resource
import sys
import time

import numpy as np

BATCH = 256
IDX_DIR = "/usr/share/datasets/fashion-mnist"


def proc_cpu_seconds(pid):
    """CPU seconds (user and system) process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def own_peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(name, batches, examples, seconds, cpu, extra):
    print(f"{name}: {batches} batches of {BATCH}, {examples} examples, {extra}: "
          f"{seconds:.3f} s, {examples / seconds:.0f} examples/s, "
          f"{1e6 * cpu / examples:.3f} cpu-us/example, {cpu:.3f} cpu-s "
          f"(first batch excluded)", flush=True)


def load(path):
    with np.load(path) as f:
        return f["x"], f["y"]


def run_tf(path, batches, threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    x, y = load(path)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(5000).repeat().batch(BATCH, drop_remainder=True)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    ds = ds.with_options(options).take(batches)
    taken, examples, checksum = 0, 0, 0.0
    start = cpu = None
    for xb, yb in ds:
        # Touch the batch as a step would: its first and last rows.
        checksum += float(xb[0, 0, 0, 0]) + float(xb[-1, -1, -1, -1])
        taken += 1
        if start is None:
            start, cpu = time.perf_counter(), time.process_time()
        else:
            examples += int(xb.shape[0])
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    report(f"tf.data (tensorflow {tf.__version__})", taken, examples, seconds,
           cpu, f"{threads} threads, shuffle 5000; peak RSS "
           f"{own_peak_rss_mib():.0f} MiB; checksum {checksum:.3f}")


def run_torch(path, batches, workers):
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    torch.set_num_threads(2)
    x, y = load(path)
    dataset = TensorDataset(torch.from_numpy(x),
                            torch.from_numpy(y.astype(np.int64)))
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=True,
                        num_workers=workers,
                        persistent_workers=workers > 0, drop_last=True)
    taken, examples, checksum = 0, 0, 0.0
    start = cpu = None
    it = None
    pids = []
    while taken < batches:
        it = iter(loader)
        if workers > 0 and not pids:
            pids = [w.pid for w in it._workers]
        for xb, yb in it:
            checksum += float(xb[0].reshape(-1)[0]) + float(xb[-1].reshape(-1)[-1])
            taken += 1
            if start is None:
                start, cpu = time.perf_counter(), time.process_time()
                worker_cpu = sum(proc_cpu_seconds(p) for p in pids)
            else:
                examples += int(xb.shape[0])
            if taken == batches:
                break
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    worker_rss = ""
    if pids:
        cpu += sum(proc_cpu_seconds(p) for p in pids) - worker_cpu
        worker_rss = " (+ workers " + ", ".join(
            f"{proc_peak_rss_mib(p):.0f}" for p in pids) + " MiB)"
    report(f"torch DataLoader (torch {torch.__version__})", taken, examples,
           seconds, cpu, f"num_workers={workers}, 2 threads; peak RSS "
           f"{own_peak_rss_mib():.0f} MiB{worker_rss}; checksum {checksum:.3f}")
    del it


def write_npy(path, out):
    x, y = load(path)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "x.npy"), np.ascontiguousarray(x))
    np.save(os.path.join(out, "y.npy"), y)
    print(f"{out}: x.npy {x.shape} {x.dtype}, y.npy {y.shape} {y.dtype}")


def read_idx(name):
    import gzip
    with gzip.open(os.path.join(IDX_DIR, name), "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def write_big(out, rows):
    """x.npy (rows, 28, 28, 1) float32 and y.npy (rows,) uint8, tiled from
    Fashion-MNIST's train split, a chunk at a time."""
    from numpy.lib.format import open_memmap
    images = read_idx("train-images-idx3-ubyte.gz")
    labels = read_idx("train-labels-idx1-ubyte.gz")
    n = len(images)
    pixels = (images.astype(np.float32) / np.float32(255)).reshape(n, 28, 28, 1)
    os.makedirs(out, exist_ok=True)
    x = open_memmap(os.path.join(out, "x.npy"), mode="w+", dtype=np.float32,
                    shape=(rows, 28, 28, 1))
    y = np.empty(rows, dtype=np.uint8)
    start = time.perf_counter()
    for first in range(0, rows, n):
        count = min(n, rows - first)
        x[first:first + count] = pixels[:count]
        y[first:first + count] = labels[:count]
        # Written back a chunk at a time and dropped from this process's
        # mapping: its resident set (file pages count in it) stays small.
        x.flush()
        x._mmap.madvise(mmap.MADV_DONTNEED)
    del x
    np.save(os.path.join(out, "y.npy"), y)
    size = os.path.getsize(os.path.join(out, "x.npy"))
    print(f"{out}: x.npy ({rows}, 28, 28, 1) float32, {size / 1e9:.2f} GB, "
          f"y.npy ({rows},) uint8, in {time.perf_counter() - start:.1f} s; "
          f"writer peak RSS {own_peak_rss_mib():.0f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["tf", "torch", "npy", "big"])
    parser.add_argument("path")
    parser.add_argument("extra", nargs="?")
    parser.add_argument("--batches", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.mode == "tf":
        run_tf(args.path, args.batches, args.threads)
    elif args.mode == "torch":
        run_torch(args.path, args.batches, args.workers)
    elif args.mode == "npy":
        write_npy(args.path, args.extra)
    else:
        write_big(args.path, int(args.extra))


if __name__ == "__main__":
    sys.exit(main())
