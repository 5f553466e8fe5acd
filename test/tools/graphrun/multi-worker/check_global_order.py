"""Checks a job's data order against another run's, global batch by batch.

  check_global_order.py EXAMPLES REF_ORDER [REF_ORDER ...] -- ORDER [ORDER ...]

Each file is one worker's `graphrun --data-order` output ("step: i j ...",
the source positions of the rows that worker fed that step), the files of
one side in rank order. A resumed job's files are those of the run that
wrote the checkpoint and of the run that resumed from it (a worker's file
is appended to, a new worker's file starts at the resumed step). A step's
global batch is the rows of every file of one side that has the step,
concatenated in the order the files are given: worker 0's rows first, as
its replicas are the program's first.

Passes when every step is written once per file, the ORDER side has the
same steps as the REF side (a reference run never interrupted, of any
shape) with the same global batch row for row, and every complete epoch
of EXAMPLES examples (global batches run across epochs) reads each example
exactly once. Exits 1 otherwise.
"""

import sys


def global_batches(paths):
    """{step: rows}, or exits naming a step a file holds twice."""
    steps = {}
    for path in paths:
        seen = set()
        for line in open(path):
            step, _, rest = line.partition(":")
            step = int(step)
            if step in seen:
                print(f"{path}: step {step} twice: FAILED")
                sys.exit(1)
            seen.add(step)
            steps.setdefault(step, []).extend(int(x) for x in rest.split())
    return steps


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    cut = sys.argv.index("--")
    examples = int(sys.argv[1])
    ref, run = global_batches(sys.argv[2:cut]), global_batches(sys.argv[cut + 1:])
    ok = True
    if sorted(run) != sorted(ref):
        print(f"steps {sorted(set(ref) - set(run))[:5]} missing, "
              f"{sorted(set(run) - set(ref))[:5]} extra: FAILED")
        return 1
    differ = [s for s in sorted(ref) if run[s] != ref[s]]
    sizes = sorted({len(rows) for rows in ref.values()})
    print(f"steps {min(ref)}-{max(ref)}: global batches of {sizes} rows, "
          + ("each the reference's, row for row" if not differ else
             f"{len(differ)} differ from the reference's (first: step "
             f"{differ[0]}: {run[differ[0]][:6]}... vs "
             f"{ref[differ[0]][:6]}...)"))
    ok &= not differ
    rows = [p for s in sorted(run) for p in run[s]]
    for e in range(len(rows) // examples):
        epoch = rows[e * examples:(e + 1) * examples]
        whole = sorted(epoch) == list(range(examples))
        print(f"epoch {e + 1}: " +
              (f"every one of the {examples} examples exactly once" if whole
               else f"{examples - len(set(epoch))} examples never read, "
               "others twice"))
        ok &= whole
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
