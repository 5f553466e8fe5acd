"""Compares two safetensors weight files tensor by tensor.

  compare_weights.py A B --rtol R

For each tensor of A (B must have the same names and shapes) prints
||a - b|| / ||b|| (2-norms over the tensor) and whether it is within R;
exits non-zero when one is not. A norm-wise error rather than an
element-wise one: Adam divides each gradient by its own running magnitude,
so an element whose gradient is near zero moves by a rounding-sized
gradient difference as much as by a real one, and one such element says
nothing about whether the two runs compute the same function.
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
    args = parser.parse_args()
    a = safetensors_io.read(args.a)
    b = safetensors_io.read(args.b)
    if sorted(a) != sorted(b):
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
        scale = max(float(np.linalg.norm(y)), 1e-30)
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
