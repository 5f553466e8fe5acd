"""Compares a `graphrun --metrics` file with Keras' fit history.

  compare_history.py steps.jsonl history.json --rtol R

history.json holds model.fit's History.history (one value per epoch of one
batch: each step's loss and metrics, as Keras logs them). Every key must be
in the metrics file, step for step, within R (relative, or absolute below
1). Prints each and PASSED or FAILED (exit status 1).
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("steps")
    parser.add_argument("history")
    parser.add_argument("--rtol", type=float, required=True)
    args = parser.parse_args()
    with open(args.steps) as f:
        steps = [json.loads(line) for line in f if line.strip()]
    steps = [s for s in steps if not s.get("eval")]
    with open(args.history) as f:
        history = json.load(f)
    failed = 0
    for key, values in sorted(history.items()):
        for i, want in enumerate(values):
            got = steps[i].get(key) if i < len(steps) else None
            ok = got is not None and abs(got - want) <= args.rtol * max(
                1.0, abs(want))
            failed += 0 if ok else 1
            print("step %d %s: %s vs Keras %.7g %s" %
                  (i + 1, key, "missing" if got is None else "%.7g" % got,
                   want, "ok" if ok else "FAILED"))
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
