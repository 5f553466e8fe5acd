"""Random 1- and 2-byte changes of a real plan file: graphrun must refuse
every one before training (exit non-zero, naming the plan), none may run.

    plan_flips.py GRAPHRUN PLAN WORK [--trials 200] [--seed 7]
"""

import argparse
import os
import random
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("plan")
    ap.add_argument("work")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    good = open(a.plan, "rb").read()
    rng = random.Random(a.seed)
    path = os.path.join(a.work, "flipped.plan")
    silent, refused = 0, 0
    for trial in range(a.trials):
        bad = bytearray(good)
        for _ in range(1 + trial % 2):
            bad[rng.randrange(len(bad))] ^= rng.randrange(1, 256)
        if bytes(bad) == good:
            continue
        with open(path, "wb") as f:
            f.write(bad)
        r = subprocess.run([a.graphrun, path, "--data", "synthetic",
                            "--steps", "1", "--no-progress"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            silent += 1
        elif path not in r.stderr:
            print(f"FAIL: trial {trial}: the error does not name the plan: "
                  f"{r.stderr.strip()}")
            sys.exit(1)
        else:
            refused += 1
    print(f"{refused} changed plans refused, {silent} ran")
    sys.exit(1 if silent else 0)


if __name__ == "__main__":
    main()
