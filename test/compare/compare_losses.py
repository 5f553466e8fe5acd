"""Compares the per-step losses of two `graphrun --metrics` files.

  compare_losses.py A.jsonl B.jsonl --rtol R

Both runs must have logged the same steps; prints each step's relative
difference |a - b| / |b| and whether all are within R (exit status 1 if
not).
"""

import argparse
import json
import sys


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            # Training steps only: evaluations and validations apart.
            if not record.get("eval") and "loss" in record:
                out[record["step"]] = record["loss"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, required=True)
    args = parser.parse_args()
    a, b = losses(args.a), losses(args.b)
    if sorted(a) != sorted(b) or not a:
        print("different steps: %s vs %s FAILED" % (sorted(a), sorted(b)))
        return 1
    worst = 0.0
    for step in sorted(a):
        err = abs(a[step] - b[step]) / max(abs(b[step]), 1e-30)
        worst = max(worst, err)
        print("step %d: %.8g vs %.8g (%.3g)" % (step, a[step], b[step], err))
    ok = worst <= args.rtol
    print("worst %.3g, rtol %g: %s" % (worst, args.rtol,
                                        "PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
