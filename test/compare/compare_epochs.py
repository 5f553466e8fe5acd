"""Compares graphrun's per-epoch logs (--csv-log, Keras' CSVLogger format)
with Keras' fit history.

  compare_epochs.py epochs.csv history.json --rtol R [--only KEY,...]

history.json holds model.fit's History.history: one value a key an epoch
(loss, metrics, val_*). Every key must be a column of the CSV file, epoch
for epoch, within R (relative, or absolute below 1). Prints each and
PASSED or FAILED (exit status 1).
"""

import argparse
import csv
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("epochs")
    parser.add_argument("history")
    parser.add_argument("--rtol", type=float, required=True)
    parser.add_argument("--only", help="the keys to compare, comma-separated "
                        "(default: every key of the history)")
    args = parser.parse_args()
    with open(args.epochs, newline="") as f:
        rows = list(csv.DictReader(f))
    with open(args.history) as f:
        history = json.load(f)
    if args.only:
        history = {k: history[k] for k in args.only.split(",")}
    failed = 0
    for key, values in sorted(history.items()):
        for i, want in enumerate(values):
            got = rows[i].get(key) if i < len(rows) else None
            got = float(got) if got not in (None, "") else None
            ok = got is not None and abs(got - want) <= args.rtol * max(
                1.0, abs(want))
            failed += 0 if ok else 1
            print("epoch %d %s: %s vs Keras %.7g %s" %
                  (i + 1, key, "missing" if got is None else "%.7g" % got,
                   want, "ok" if ok else "FAILED"))
    if len(rows) != len(next(iter(history.values()))):
        failed += 1
        print("%d epochs logged, Keras %d FAILED" %
              (len(rows), len(next(iter(history.values())))))
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
