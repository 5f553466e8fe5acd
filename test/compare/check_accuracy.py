"""Checks the evaluations a `graphrun --metrics` file recorded.

  check_accuracy.py m.jsonl --min A
  check_accuracy.py m.jsonl --metric loss --max M

Prints every evaluation's step, loss and metric (accuracy by default),
then whether the last one reached A (or stayed at most M) (exit status 1
if not, or if there was no evaluation).
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--metric", default="accuracy")
    bound = parser.add_mutually_exclusive_group(required=True)
    bound.add_argument("--min", type=float)
    bound.add_argument("--max", type=float)
    args = parser.parse_args()
    evals = []
    with open(args.metrics) as f:
        for line in f:
            record = json.loads(line)
            if record.get("eval"):
                evals.append(record)
    m = args.metric
    for e in evals:
        print("eval at step %d: loss %.4f, %s %.4f" %
              (e["step"], e["loss"], m, e[m]))
    if not evals:
        print("no evaluation recorded: FAILED")
        return 1
    value = evals[-1][m]
    if args.min is not None:
        ok = value >= args.min
        print("final %s %.4f, at least %.4f: %s" %
              (m, value, args.min, "PASSED" if ok else "FAILED"))
    else:
        ok = value <= args.max
        print("final %s %.4f, at most %.4f: %s" %
              (m, value, args.max, "PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
