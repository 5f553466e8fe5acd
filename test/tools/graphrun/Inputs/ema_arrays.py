"""Arrays for ema-restore-best.test: 200 training and 40 validation
examples of shape (6, 6, 2), labels in [0, 3). Usage: ema_arrays.py DIR"""

import sys

import numpy as np

rng = np.random.default_rng(0)
for name, n in (("train", 200), ("val", 40)):
    np.savez(f"{sys.argv[1]}/{name}.npz",
             x=rng.normal(size=(n, 6, 6, 2)).astype(np.float32),
             y=rng.integers(0, 3, n))
