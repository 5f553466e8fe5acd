"""Writes Fashion-MNIST as NumPy arrays, as a Keras user prepares it.

  fashion_mnist_arrays.py OUT_DIR [--flat] [--rows N] [--csv]

Reads Debian's IDX files (/usr/share/datasets/fashion-mnist) with NumPy
alone and writes OUT_DIR/train.npz and OUT_DIR/test.npz holding x (float32
pixels / 255, as keras.datasets users scale them) and y (uint8 class
indices); --flat reshapes x to (N, 784) (Keras' multi-GPU guide does), else
(N, 28, 28, 1). Also the pair train_x.npy / train_y.npy (x in Fortran
order, y as int64), and with --csv train.csv: the first --rows examples of
the flat pixels and a `label` column.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))
from image_folder_check import FASHION, read_idx  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--flat", action="store_true")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--csv", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(os.path.join(FASHION, prefix + "-images-idx3-ubyte.gz")).astype(np.float32) / np.float32(255)
        y = read_idx(os.path.join(FASHION, prefix + "-labels-idx1-ubyte.gz"))
        if args.rows:
            x, y = x[: args.rows], y[: args.rows]
        x = x.reshape(len(x), 784) if args.flat else x.reshape(len(x), 28, 28, 1)
        np.savez(os.path.join(args.out, split + ".npz"), x=x, y=y)
        if split == "train":
            np.save(os.path.join(args.out, "train_x.npy"), np.asfortranarray(x))
            np.save(os.path.join(args.out, "train_y.npy"), y.astype(np.int64))
            if args.csv:
                flat = x.reshape(len(x), -1)
                header = ",".join(["p%d" % i for i in range(flat.shape[1])] + ["label"])
                table = np.concatenate([flat, y.reshape(-1, 1).astype(np.float32)], axis=1)
                # repr-exact floats, so the CSV holds the npz's values.
                np.savetxt(os.path.join(args.out, "train.csv"), table, delimiter=",",
                           header=header, comments="", fmt="%.9g")


if __name__ == "__main__":
    main()
