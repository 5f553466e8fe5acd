"""Recounts graphrun's evaluation over the whole Fashion-MNIST test set.

  eval_recount.py WEIGHTS METRICS [METRICS ...] [--data-dir DIR] [--rtol R]

WEIGHTS is test/tools/graphrun/Inputs/tiny_cnn.json's weights as graphrun
--save-weights wrote them (Conv2D(4, 3, relu), MaxPooling2D(2), Flatten,
Dense(10, softmax)). This script runs that model forward in float64 with
NumPy on all 10000 test images, read from the IDX files directly, and
counts what Keras' evaluate reports: accuracy (arg-max, first maximum, equal
to the label) and the mean categorical cross-entropy, which for a softmax
output Keras computes from the logits. Each METRICS file's last evaluation
(graphrun --eval --metrics) must give the same accuracy (the same count of
correct examples: graphrun counts the last, partial batch too) and a loss
within --rtol, and, when it has one, the same confusion matrix.

--predictions P.npy (graphrun --predict fashion_mnist -o P.npy) must hold
the softmax of the same logits for all 10000 test images, in file order,
within --prediction-atol, and P.npy.txt must name them in order.
"""

import argparse
import gzip
import json
import struct
import sys

import numpy as np

from safetensors_io import read as read_safetensors


def read_idx(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", blob[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob[4 + 4 * ndim:], np.uint8).reshape(dims)


def logits_of(w, images):
    """images [N, 28, 28, 1] in [0, 1] -> logits [N, 10], float64."""
    x = images.astype(np.float64)
    k = w["conv2d/kernel"].astype(np.float64)  # HWIO [3, 3, 1, 4]
    n = x.shape[0]
    conv = np.zeros((n, 26, 26, k.shape[3]))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nhwc,cf->nhwf", x[:, i:i + 26, j:j + 26, :],
                              k[i, j])
    conv = np.maximum(conv + w["conv2d/bias"], 0.0)
    pooled = conv.reshape(n, 13, 2, 13, 2, -1).max(axis=(2, 4))
    flat = pooled.reshape(n, -1)  # NHWC order, as Keras flattens
    return flat @ w["dense_1/kernel"].astype(np.float64) + w["dense_1/bias"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weights")
    parser.add_argument("metrics", nargs="+")
    parser.add_argument("--data-dir",
                        default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--predictions")
    parser.add_argument("--prediction-atol", type=float, default=1e-5)
    args = parser.parse_args()

    images = read_idx(f"{args.data_dir}/t10k-images-idx3-ubyte.gz")
    labels = read_idx(f"{args.data_dir}/t10k-labels-idx1-ubyte.gz")
    images = (images.astype(np.float32) / 255.0)[..., None]
    z = logits_of(read_safetensors(args.weights), images)
    predicted = np.argmax(z, axis=1)  # the first maximum, as graphrun
    correct = int(np.sum(predicted == labels))
    m = z.max(axis=1, keepdims=True)
    log_softmax = z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    loss = float(-np.mean(log_softmax[np.arange(len(labels)), labels]))
    accuracy = correct / len(labels)
    print("recount: %d of %d correct, accuracy %.6f, loss %.8f" %
          (correct, len(labels), accuracy, loss))
    confusion = np.zeros((10, 10), np.int64)
    np.add.at(confusion, (labels.astype(np.int64), predicted), 1)

    failed = False
    if args.predictions:
        p = np.load(args.predictions)
        softmax = np.exp(log_softmax)
        names = open(args.predictions + ".txt").read().splitlines()
        in_order = names == [f"{args.data_dir}/t10k-images-idx3-ubyte.gz#{i}"
                             for i in range(len(labels))]
        shape_ok = p.shape == softmax.shape and p.dtype == np.float32
        diff = float(np.max(np.abs(p - softmax))) if shape_ok else float("inf")
        ok = shape_ok and in_order and diff <= args.prediction_atol
        print("predictions: %s %s, largest difference from the softmax of "
              "the recount %.2e, sources %s (%s)" %
              (p.dtype, "x".join(map(str, p.shape)), diff,
               "in order" if in_order else "OUT OF ORDER",
               "ok" if ok else "FAIL"))
        failed |= not ok
    for path in args.metrics:
        evals = [r for r in map(json.loads, open(path)) if r.get("eval")]
        if not evals:
            print(f"{path}: no evaluation: FAIL")
            failed = True
            continue
        e = evals[-1]
        # Half an example of slack: the same count of correct examples.
        acc_ok = abs(e["accuracy"] - accuracy) < 0.5 / len(labels)
        loss_diff = abs(e["loss"] - loss) / abs(loss)
        loss_ok = loss_diff <= args.rtol
        print("%s: accuracy %.6f (%s), loss %.8f, relative difference "
              "%.2e (%s)" % (path.rsplit("/", 1)[-1], e["accuracy"],
                             "ok" if acc_ok else "FAIL", e["loss"],
                             loss_diff, "ok" if loss_ok else "FAIL"))
        failed |= not (acc_ok and loss_ok)
        if "confusion" in e:
            same = np.array_equal(np.array(e["confusion"]).reshape(10, 10),
                                  confusion)
            print("%s: confusion matrix %s" % (path.rsplit("/", 1)[-1],
                                               "ok" if same else "FAIL"))
            failed |= not same
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
