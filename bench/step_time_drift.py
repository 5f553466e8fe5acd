"""Whether a long run's step slows down: the median step time of its first
and of its last N steps, from a `graphrun --metrics` file written with
--log-every 1, and, given the run's last checkpoint, how many of Adam's
first-moment slots (`<variable>/m`) hold subnormal floats.

  step_time_drift.py METRICS.jsonl [--window 500] [--checkpoint FILE]

Prints one line:
  steps 4685, first 500 median 0.912 ms, last 500 median 0.934 ms,
  last/first 1.024, subnormal m 0.00% (largest: dense/kernel/m 0.00%)
"""

import argparse
import json
import struct
import sys

import numpy as np


def step_seconds(path):
    seconds = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "seconds" in record and not record.get("eval") and \
                    not record.get("validation"):
                seconds.append(record["seconds"])
    return seconds


def subnormal_fractions(path):
    """{slot name: fraction of its floats that are subnormal} for every
    first-moment slot of a safetensors checkpoint."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__" or not name.endswith("/m") or \
                entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        # Bits, not floats: exponent field 0 and a non-zero mantissa.
        bits = np.frombuffer(data[begin:end], dtype="<u4")
        subnormal = ((bits & 0x7F800000) == 0) & ((bits & 0x007FFFFF) != 0)
        out[name] = (int(subnormal.sum()), bits.size)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--window", type=int, default=500)
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    seconds = step_seconds(args.metrics)
    if len(seconds) < 2 * args.window:
        sys.exit(f"{args.metrics}: {len(seconds)} steps, fewer than two "
                 f"windows of {args.window}")
    first = 1000 * float(np.median(seconds[:args.window]))
    last = 1000 * float(np.median(seconds[-args.window:]))
    line = (f"steps {len(seconds)}, first {args.window} median {first:.3f} "
            f"ms, last {args.window} median {last:.3f} ms, last/first "
            f"{last / first:.3f}")
    if args.checkpoint:
        fractions = subnormal_fractions(args.checkpoint)
        count = sum(n for n, _ in fractions.values())
        total = sum(t for _, t in fractions.values())
        name, (n, t) = max(fractions.items(),
                           key=lambda kv: kv[1][0] / kv[1][1])
        line += (f", subnormal m {100 * count / total:.2f}% (largest: "
                 f"{name} {100 * n / t:.2f}%)")
    print(line)


if __name__ == "__main__":
    main()
