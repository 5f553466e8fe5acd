"""fit() from Python against graphrun on the same plan and the same arrays.

  python_fit.py ARRAYS_DIR GRAPHRUN EPOCHS ROUNDS

Compiles examples/fashion_mnist_cnn.json with graphc.compile (batch 256, 2
CPU replicas), then alternates ROUNDS times: graphrun on the trainer's own
plan with --data arrays:ARRAYS_DIR/train.npz, and trainer.fit on the same
arrays loaded with NumPy, each EPOCHS epochs from the same seed and initial
weights. Prints each run's images/s (the step timer's, after its warm-up)
and the medians; and the fit's peak resident memory above what the process
held with the arrays loaded, against the arrays' bytes (how many copies of
x a fit makes).
"""

import os
import re
import resource
import statistics
import subprocess
import sys

import numpy as np

import graphc

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
arrays, graphrun, epochs, rounds = sys.argv[1], sys.argv[2], int(
    sys.argv[3]), int(sys.argv[4])

with np.load(os.path.join(arrays, "train.npz")) as f:
    x, y = f["x"], f["y"]
trainer = graphc.compile(os.path.join(root, "examples",
                                      "fashion_mnist_cnn.json"),
                         batch_size=256, devices="cpu:2")
plan = trainer._plan_path


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


ours, theirs = [], []
for r in range(rounds):
    run = subprocess.run(
        [graphrun, plan, "--cpus", "2", "--backend", "cpu", "--data",
         f"arrays:{arrays}/train.npz", "--epochs", str(epochs),
         "--no-progress", "--log-every", "0"],
        capture_output=True, text=True, check=True)
    theirs.append(float(re.search(r"images/sec: ([0-9.]+)", run.stdout)[1]))
    fresh = graphc.compile(os.path.join(root, "examples",
                                        "fashion_mnist_cnn.json"),
                           batch_size=256, devices="cpu:2")
    before = peak_mib()
    history = fresh.fit(x, y, epochs=epochs, verbose=0)
    after = peak_mib()
    ours.append(history.timing["examples_per_second"])
    print(f"round {r + 1}: graphrun {theirs[-1]:.0f} images/s, "
          f"graphc.fit {ours[-1]:.0f} images/s "
          f"(peak RSS +{after - before:.0f} MiB)", flush=True)

mib = x.nbytes / 2**20
print(f"x: {x.shape} {x.dtype}, {mib:.0f} MiB")
print(f"median: graphrun {statistics.median(theirs):.0f} images/s, "
      f"graphc.fit {statistics.median(ours):.0f} images/s: "
      f"{statistics.median(ours) / statistics.median(theirs):.3f}x")
