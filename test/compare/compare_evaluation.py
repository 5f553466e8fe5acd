"""Compares graphrun's evaluation (--eval --metrics m.jsonl) with Keras'
model.evaluate.

  compare_evaluation.py metrics.jsonl evaluate.json --rtol R

evaluate.json holds model.evaluate(..., return_dict=True): the loss and each
logged value (per-output losses, metrics) by Keras' name. The metrics
file's last evaluation line ({"eval": true, ...}) must hold every key,
each within R (relative, or absolute below 1). Prints each and PASSED or
FAILED (exit status 1).
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("evaluate")
    parser.add_argument("--rtol", type=float, required=True)
    args = parser.parse_args()
    with open(args.metrics) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    evaluations = [line for line in lines if line.get("eval")]
    if not evaluations:
        print("no evaluation in %s FAILED" % args.metrics)
        return 1
    got = evaluations[-1]
    with open(args.evaluate) as f:
        want = json.load(f)
    failed = 0
    for key, value in sorted(want.items()):
        mine = got.get(key)
        ok = mine is not None and abs(mine - value) <= args.rtol * max(
            1.0, abs(value))
        failed += 0 if ok else 1
        print("%s: %s vs Keras %.7g %s" %
              (key, "missing" if mine is None else "%.7g" % mine, value,
               "ok" if ok else "FAILED"))
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
