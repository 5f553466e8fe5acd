"""Compares trained weights by how far training moved them.

  compare_updates.py A B INIT --rtol R

For each tensor of B (A and INIT must hold the same names and shapes)
prints ||a - b|| / ||b - init||: the difference of two runs as a share of
the update the reference run B made from INIT, and whether it is within R;
exits non-zero when one is not. Mixed-precision runs differ from each other
by rounding noise in the gradients, which scales with the update rather
than with the weights (a bias starts at zero, a kernel barely moves in
three steps): measured against the weights, any difference would look
small.
"""

import argparse
import sys

import numpy as np

import safetensors_io


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("init")
    parser.add_argument("--rtol", type=float, required=True)
    args = parser.parse_args()
    a, b, init = (safetensors_io.read(p) for p in (args.a, args.b, args.init))
    if sorted(a) != sorted(b) or sorted(init) != sorted(b):
        print("different tensors: %s vs %s vs %s" %
              (sorted(a), sorted(b), sorted(init)))
        return 1
    failed = 0
    worst = 0.0
    for name in sorted(b):
        x, y, y0 = (t[name].astype(np.float64) for t in (a, b, init))
        if x.shape != y.shape or y0.shape != y.shape:
            print("%s: shapes %s vs %s FAILED" % (name, x.shape, y.shape))
            failed += 1
            continue
        moved = float(np.linalg.norm(y - y0))
        if moved == 0.0:
            err = 0.0 if np.array_equal(x, y) else float("inf")
        else:
            err = float(np.linalg.norm(x - y)) / moved
        worst = max(worst, err)
        ok = np.isfinite(err) and err <= args.rtol
        failed += 0 if ok else 1
        print("%s: %.3g %s" % (name, err, "ok" if ok else "FAILED"))
    print("worst %.3g, rtol %g: %s" % (worst, args.rtol,
                                        "FAILED" if failed else "PASSED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
