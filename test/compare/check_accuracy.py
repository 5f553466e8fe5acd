"""Checks the evaluations a `graphrun --metrics` file recorded.

  check_accuracy.py m.jsonl --min A

Prints every evaluation's step, loss and accuracy, then whether the last
one reached A (exit status 1 if not, or if there was no evaluation).
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--min", type=float, required=True)
    args = parser.parse_args()
    evals = []
    with open(args.metrics) as f:
        for line in f:
            record = json.loads(line)
            if record.get("eval"):
                evals.append(record)
    for e in evals:
        print("eval at step %d: loss %.4f, accuracy %.4f" %
              (e["step"], e["loss"], e["accuracy"]))
    if not evals:
        print("no evaluation recorded: FAILED")
        return 1
    ok = evals[-1]["accuracy"] >= args.min
    print("final accuracy %.4f, at least %.4f: %s" %
          (evals[-1]["accuracy"], args.min, "PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
