"""Checks one epoch of a multi-worker job's data order.

  check_coverage.py EXAMPLES WORKERS ORDER_0 [ORDER_1 ...]

Each ORDER file is a worker's `graphrun --data-order` output: "step: i j
...", the source positions of the examples that worker fed that step.
Worker w must read only its shard (positions with p % WORKERS == w, as
tf.data's shard), and all workers together every one of the EXAMPLES
exactly once. Exits 1 otherwise.
"""

import sys
from collections import Counter


def main():
    examples, workers, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    if len(paths) != workers:
        sys.exit(f"{workers} workers, {len(paths)} files")
    seen = Counter()
    ok = True
    for w, path in enumerate(paths):
        steps = 0
        rows = []
        for line in open(path):
            step, _, rest = line.partition(":")
            steps += 1
            rows += [int(x) for x in rest.split()]
        foreign = [p for p in rows if p % workers != w]
        print(f"worker {w}: {steps} steps, {len(rows)} examples, "
              + ("all from its shard" if not foreign else
                 f"{len(foreign)} from other shards (first {foreign[0]})"))
        ok &= not foreign
        seen.update(rows)
    twice = [p for p, n in seen.items() if n > 1]
    missing = examples - len(seen)
    if twice or missing:
        print(f"{len(twice)} examples read more than once, {missing} never: "
              "FAILED")
        return 1
    print(f"every one of the {examples} examples exactly once: "
          + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
