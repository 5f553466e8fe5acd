"""Image folders for graphrun's tests, and independent recounts of its output.

  image_folder_check.py make DIR --classes a,b [--per-class N] [--first K]
      Fashion-MNIST test images K, K+1, ... (the IDX file) as 28x28 grey
      JPEGs (quality 90), N a class, DIR/CLASS/NNNNN.jpeg (NNNNN: the IDX
      position).
  image_folder_check.py bad KIND SRC DST
      A bad copy of the JPEG SRC: corrupt (bytes of its scan overwritten),
      truncated (its first 60%), png (a PNG of the same pixels), empty.
  image_folder_check.py idx-in-folder-order FOLDER OUT --labels A,B,...
      The Fashion-MNIST training IDX files rewritten in FOLDER's listing
      order (classes in --labels order, then paths in byte order; FOLDER is
      scripts/fashion-mnist-jpeg.py's train split, whose file names are the
      IDX positions): the original images of the JPEGs, in the same order.
  image_folder_check.py first-loss A.jsonl B.jsonl --atol T
      The first logged step's loss of two graphrun --metrics files: equal
      within T.
  image_folder_check.py predictions P.npy FOLDER WEIGHTS [--atol T]
      Recounts graphrun --predict images:FOLDER -o P.npy for the tiny CNN
      (test/tools/graphrun/Inputs/tiny_cnn.json, WEIGHTS its safetensors):
      lists FOLDER itself, decodes each JPEG as tf.io.decode_jpeg does
      (decode_like_tf), runs the model in NumPy, and compares the softmax
      with P.npy row by row, and the paths with P.npy.txt.
"""

import argparse
import gzip
import io
import json
import os
import struct
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "compare"))

FASHION = "/usr/share/datasets/fashion-mnist"
EXTENSIONS = (".jpg", ".jpeg", ".JPG", ".JPEG")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", blob[:4])
    assert zero == 0 and dtype == 0x08, path
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob[4 + 4 * ndim:], np.uint8).reshape(dims)


def write_idx(path, array):
    with open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x08, array.ndim))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(np.ascontiguousarray(array, np.uint8).tobytes())


def decode_like_tf(path, grey):
    """The pixels of tf.io.decode_jpeg (and so of Keras'
    image_dataset_from_directory, graphrun's default): libjpeg-turbo's fast
    integer IDCT, which PIL cannot ask for (it decodes with the accurate
    one, a level or so apart), through TurboJPEG's C API. uint8, H x W x C.
    """
    import ctypes
    tj = ctypes.CDLL("libturbojpeg.so.0")
    tj.tjInitDecompress.restype = ctypes.c_void_p
    tj.tjDestroy.argtypes = [ctypes.c_void_p]
    tj.tjGetErrorStr2.restype = ctypes.c_char_p
    tj.tjGetErrorStr2.argtypes = [ctypes.c_void_p]
    tj.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                       ctypes.c_ulong] + \
        [ctypes.POINTER(ctypes.c_int)] * 4
    tj.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_ulong, ctypes.c_void_p] + \
        [ctypes.c_int] * 5
    data = open(path, "rb").read()
    handle = tj.tjInitDecompress()
    try:
        w, h, sub, space = (ctypes.c_int() for _ in range(4))
        if tj.tjDecompressHeader3(handle, data, len(data), ctypes.byref(w),
                                  ctypes.byref(h), ctypes.byref(sub),
                                  ctypes.byref(space)) != 0:
            sys.exit(f"{path}: {tj.tjGetErrorStr2(handle).decode()}")
        channels = 1 if grey else 3
        out = np.empty((h.value, w.value, channels), np.uint8)
        tjpf_gray, tjpf_rgb, tjflag_fastdct = 6, 0, 2048
        if tj.tjDecompress2(handle, data, len(data), out.ctypes.data,
                            w.value, 0, h.value,
                            tjpf_gray if grey else tjpf_rgb,
                            tjflag_fastdct) != 0:
            sys.exit(f"{path}: {tj.tjGetErrorStr2(handle).decode()}")
        return out
    finally:
        tj.tjDestroy(handle)


def listing(root, classes=None):
    """(paths, labels) in the order graphrun's image folders list them."""
    if classes is None:
        classes = sorted(e for e in os.listdir(root) if not e.startswith(".")
                         and os.path.isdir(os.path.join(root, e)))
    paths, labels = [], []
    for label, name in enumerate(classes):
        found = []
        for folder, dirs, files in os.walk(os.path.join(root, name)):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [os.path.join(folder, f) for f in files
                      if not f.startswith(".") and f.endswith(EXTENSIONS)]
        found.sort(key=os.fsencode)
        paths += found
        labels += [label] * len(found)
    return paths, labels


def make(args):
    images = read_idx(f"{FASHION}/t10k-images-idx3-ubyte.gz")
    k = args.first
    for name in args.classes.split(","):
        os.makedirs(os.path.join(args.dir, name), exist_ok=True)
        for _ in range(args.per_class):
            Image.fromarray(images[k], mode="L").save(
                os.path.join(args.dir, name, f"{k:05d}.jpeg"), "JPEG",
                quality=90)
            k += 1


def bad(args):
    data = open(args.src, "rb").read() if args.kind != "empty" else b""
    if args.kind == "corrupt":
        # Inside the scan (the entropy-coded data after the SOS segment),
        # so that the header reads and the decoder finds the fault.
        sos = data.index(b"\xff\xda")
        scan = sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")
        at = scan + (len(data) - scan) // 3
        n = min(32, (len(data) - scan) // 3)
        data = data[:at] + b"\xff" * n + data[at + n:]
    elif args.kind == "truncated":
        data = data[:len(data) * 6 // 10]
    elif args.kind == "png":
        out = io.BytesIO()
        Image.open(args.src).save(out, "PNG")
        data = out.getvalue()
    with open(args.dst, "wb") as f:
        f.write(data)


def idx_in_folder_order(args):
    classes = args.labels.split(",")
    paths, labels = listing(args.folder, classes)
    order = np.array([int(os.path.basename(p).split(".")[0]) for p in paths])
    images = read_idx(f"{FASHION}/train-images-idx3-ubyte.gz")
    truth = read_idx(f"{FASHION}/train-labels-idx1-ubyte.gz")
    if not np.array_equal(truth[order], np.array(labels)):
        sys.exit("the folder's classes are not the IDX labels in --labels "
                 "order")
    os.makedirs(args.out, exist_ok=True)
    write_idx(os.path.join(args.out, "train-images-idx3-ubyte"),
              images[order])
    write_idx(os.path.join(args.out, "train-labels-idx1-ubyte"), truth[order])
    print(f"idx-in-folder-order: {len(order)} examples, the first from "
          f"{paths[0]}")


def first_loss(args):
    def first(path):
        for line in open(path):
            record = json.loads(line)
            if not record.get("eval"):
                return record["step"], record["loss"]
        sys.exit(f"{path}: no step logged")
    (sa, a), (sb, b) = first(args.a), first(args.b)
    ok = sa == sb and abs(a - b) <= args.atol
    print(f"first-loss: step {sa}: {a:.6f} and {b:.6f}, difference "
          f"{abs(a - b):.2e}, at most {args.atol:g}: "
          f"{'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def predictions(args):
    from eval_recount import logits_of
    from safetensors_io import read as read_safetensors
    paths, _ = listing(args.folder)
    got = np.load(args.npy)
    names = open(args.npy + ".txt").read().splitlines()
    pixels = np.stack([decode_like_tf(p, grey=True).astype(np.float32)
                       for p in paths]) / np.float32(255.0)
    z = logits_of(read_safetensors(args.weights), pixels)
    z = z - z.max(axis=1, keepdims=True)
    softmax = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    same_files = [os.path.realpath(n) for n in names] == \
        [os.path.realpath(p) for p in paths]
    shape_ok = got.dtype == np.float32 and got.shape == softmax.shape
    diff = float(np.abs(got - softmax).max()) if shape_ok else float("inf")
    ok = same_files and shape_ok and diff <= args.atol
    print(f"predictions: {got.dtype} {'x'.join(map(str, got.shape))} for "
          f"{len(paths)} files listed independently; paths "
          f"{'in order' if same_files else 'DIFFER'}; largest difference "
          f"from the NumPy recount {diff:.2e}: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("dir")
    p.add_argument("--classes", required=True)
    p.add_argument("--per-class", type=int, default=8)
    p.add_argument("--first", type=int, default=0)
    p = sub.add_parser("bad")
    p.add_argument("kind", choices=["corrupt", "truncated", "png", "empty"])
    p.add_argument("src")
    p.add_argument("dst")
    p = sub.add_parser("idx-in-folder-order")
    p.add_argument("folder")
    p.add_argument("out")
    p.add_argument("--labels", required=True)
    p = sub.add_parser("first-loss")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, required=True)
    p = sub.add_parser("predictions")
    p.add_argument("npy")
    p.add_argument("folder")
    p.add_argument("weights")
    p.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    return {"make": make, "bad": bad, "idx-in-folder-order":
            idx_in_folder_order, "first-loss": first_loss,
            "predictions": predictions}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
