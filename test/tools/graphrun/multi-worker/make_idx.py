"""Writes a tiny Fashion-MNIST-shaped data set, gzipped IDX files:

  make_idx.py DIR N

N training and N test images of 28x28 (pixel values from the example's
index) with labels i % 10, named as Debian's dataset-fashion-mnist names
them, for graphrun --data-dir.
"""

import gzip
import os
import struct
import sys


def write(path, magic, dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x08, len(dims)))
        f.write(struct.pack(">" + "I" * len(dims), *dims))
        f.write(payload)


def main():
    directory, n = sys.argv[1], int(sys.argv[2])
    for split in ("train", "t10k"):
        pixels = bytes((i * 7 + j) % 256 for i in range(n) for j in range(784))
        write(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), 3,
              [n, 28, 28], pixels)
        write(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), 1,
              [n], bytes(i % 10 for i in range(n)))


if __name__ == "__main__":
    main()
