"""Compares two safetensors weight files tensor by tensor.

  compare_weights.py A B --rtol R [--update-from INIT]

For each tensor of A (B must have the same names and shapes) prints
||a - b|| / ||b|| (2-norms over the tensor) and whether it is within R;
exits non-zero when one is not. A norm-wise error rather than an
element-wise one: Adam divides each gradient by its own running magnitude,
so an element whose gradient is near zero moves by a rounding-sized
gradient difference as much as by a real one, and one such element says
nothing about whether the two runs compute the same function.

With --update-from INIT (the weights both runs started from) the error is
||a - b|| / ||b - init||: a share of the update run B made. Mixed-precision
runs differ by rounding noise in the gradients, which scales with the
update rather than with the weights (a bias starts at zero, a kernel
barely moves in three steps): measured against the weights, any
difference would look small.
"""

import argparse
import sys

import numpy as np

import safetensors_io


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, required=True)
    parser.add_argument("--update-from", metavar="INIT")
    args = parser.parse_args()
    a = safetensors_io.read(args.a)
    b = safetensors_io.read(args.b)
    init = safetensors_io.read(args.update_from) if args.update_from else None
    if sorted(a) != sorted(b) or (init is not None and sorted(init) != sorted(b)):
        print("different tensors: %s vs %s" % (sorted(a), sorted(b)))
        return 1
    failed = 0
    worst = 0.0
    for name in sorted(a):
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            print("%s: shapes %s vs %s FAILED" % (name, x.shape, y.shape))
            failed += 1
            continue
        origin = 0.0 if init is None else init[name].astype(np.float64)
        scale = max(float(np.linalg.norm(y - origin)), 1e-30)
        err = float(np.linalg.norm(x - y)) / scale
        worst = max(worst, err)
        ok = np.isfinite(err) and err <= args.rtol
        failed += 0 if ok else 1
        print("%s: %.3g %s" % (name, err, "ok" if ok else "FAILED"))
    print("worst %.3g, rtol %g: %s" % (worst, args.rtol,
                                        "FAILED" if failed else "PASSED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
