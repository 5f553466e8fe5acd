"""Writes two Fashion-MNIST classes as a binary classification, as arrays.

  fashion_mnist_binary.py OUT_DIR CLASS0 CLASS1

The examples of classes CLASS0 and CLASS1 only, x (N, 784) float32 pixels
/ 255 and y (N, 1) float32: 0 for CLASS0, 1 for CLASS1 (what a Keras user
feeds a one-logit head under BinaryCrossentropy). train.npz from the
training split, test.npz from the test split.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))
from image_folder_check import FASHION, read_idx  # noqa: E402


def main():
    out, c0, c1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(os.path.join(FASHION, prefix + "-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(FASHION, prefix + "-labels-idx1-ubyte.gz"))
        keep = (y == c0) | (y == c1)
        x = x[keep].reshape(-1, 784).astype(np.float32) / np.float32(255)
        y = (y[keep] == c1).astype(np.float32).reshape(-1, 1)
        np.savez(os.path.join(out, split + ".npz"), x=x, y=y)


if __name__ == "__main__":
    main()
