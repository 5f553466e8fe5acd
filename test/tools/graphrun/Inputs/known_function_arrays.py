"""Writes a regression data set of a known function, as NumPy arrays.

  known_function_arrays.py OUT_DIR

x: (N, 8) standard normal features; y: (N, 1), y = sin(2 x0) + x1 x2 +
0.5 x3^2 - x4 + 0.1 * noise. train.npz holds 20000 examples, test.npz
4000 (another draw). The noise alone has variance 0.01: the floor of the
test MSE a perfect model reaches.
"""

import os
import sys

import numpy as np


def draw(rng, n):
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.5 * x[:, 3] ** 2 - x[:, 4]
         + 0.1 * rng.standard_normal(n))
    return x, y.astype(np.float32).reshape(n, 1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261201)
    for split, n in (("train", 20000), ("test", 4000)):
        x, y = draw(rng, n)
        np.savez(os.path.join(out, split + ".npz"), x=x, y=y)


if __name__ == "__main__":
    main()
