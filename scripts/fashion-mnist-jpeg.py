#!/usr/bin/python3
"""Fashion-MNIST as JPEG folders, one sub-folder per class.

The layout an image-folder data set has (OCT2017/train/CNV/*.jpeg), made from
the IDX files Debian's dataset-fashion-mnist installs, so that graphrun's
image-folder input and bench/image-decode.sh can run on real images here:

  OUT/train/{T-shirt_top,Trouser,...,Ankle_boot}/NNNNN.jpeg   60,000 files
  OUT/test/{T-shirt_top,Trouser,...,Ankle_boot}/NNNNN.jpeg    10,000 files

NNNNN is the example's position in its IDX file; each image is the 28x28
grey original saved as a grayscale JPEG at quality 90. Idempotent: a split
whose files are all there, made from the same source at the same quality
(recorded in OUT/SPLIT/.complete, a hidden file listings skip), is left
alone; a split left half-made by an interrupted run is made again.

Run with Debian's python (python3-numpy, python3-pil):

  /usr/bin/python3 scripts/fashion-mnist-jpeg.py [--src DIR] [--out DIR]
"""
import argparse
import gzip
import json
import os
import shutil
import struct
import sys

import numpy as np
from PIL import Image

CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
           "Shirt", "Sneaker", "Bag", "Ankle_boot"]
SPLITS = {"train": "train", "test": "t10k"}
QUALITY = 90


def read_idx(path):
    """An IDX file of unsigned bytes, gzipped or not, as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    if array.size != int(np.prod(dims)):
        sys.exit(f"{path}: {array.size} bytes of data for dimensions {dims}; "
                 "the file is truncated, fetch it again")
    return array.reshape(dims)


def find(src, prefix, kind):
    for name in (f"{prefix}-{kind}-idx{3 if kind == 'images' else 1}-ubyte.gz",
                 f"{prefix}-{kind}-idx{3 if kind == 'images' else 1}-ubyte"):
        path = os.path.join(src, name)
        if os.path.exists(path):
            return path
    sys.exit(f"{src}: no {prefix} {kind} file; install dataset-fashion-mnist "
             "or pass --src")


def stamp_for(images_path, labels_path, labels):
    counts = np.bincount(labels, minlength=len(CLASSES)).tolist()
    return {
        "images": os.path.abspath(images_path),
        "images_bytes": os.path.getsize(images_path),
        "labels": os.path.abspath(labels_path),
        "labels_bytes": os.path.getsize(labels_path),
        "quality": QUALITY,
        "counts": counts,
    }


def complete(split_dir, stamp):
    """Whether an earlier run finished this split from the same source."""
    try:
        with open(os.path.join(split_dir, ".complete")) as f:
            if json.load(f) != stamp:
                return False
    except (OSError, ValueError):
        return False
    for name, count in zip(CLASSES, stamp["counts"]):
        folder = os.path.join(split_dir, name)
        if not os.path.isdir(folder):
            return False
        if sum(1 for e in os.listdir(folder) if e.endswith(".jpeg")) != count:
            return False
    return True


def write_split(src, out, split):
    prefix = SPLITS[split]
    images_path = find(src, prefix, "images")
    labels_path = find(src, prefix, "labels")
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"{images_path} and {labels_path} hold {images.shape[0]} "
                 f"images but {labels.shape[0]} labels")
    split_dir = os.path.join(out, split)
    stamp = stamp_for(images_path, labels_path, labels)
    if complete(split_dir, stamp):
        print(f"{split_dir}: complete ({labels.shape[0]} images), nothing to do")
        return
    stamp_path = os.path.join(split_dir, ".complete")
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    # From scratch: what a half-made or older split left must not mix in.
    for name in CLASSES:
        shutil.rmtree(os.path.join(split_dir, name), ignore_errors=True)
        os.makedirs(os.path.join(split_dir, name))
    for i, (image, label) in enumerate(zip(images, labels)):
        path = os.path.join(split_dir, CLASSES[label], f"{i:05d}.jpeg")
        # Written aside and renamed: an interrupted run leaves no half file
        # under an image's name.
        tmp = path + ".tmp"
        Image.fromarray(image, mode="L").save(tmp, "JPEG", quality=QUALITY)
        os.replace(tmp, path)
    with open(stamp_path, "w") as f:
        json.dump(stamp, f)
    print(f"{split_dir}: wrote {labels.shape[0]} images in {len(CLASSES)} "
          "classes")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default="/usr/share/datasets/fashion-mnist",
                        help="the four IDX files (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join(root, "build",
                                                      "fashion-mnist-jpeg"),
                        help="where train/ and test/ go (default: "
                             "build/fashion-mnist-jpeg in the repository)")
    args = parser.parse_args()
    for split in SPLITS:
        write_split(args.src, args.out, split)


if __name__ == "__main__":
    main()
