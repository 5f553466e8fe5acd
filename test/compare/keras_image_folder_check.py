"""Checks of keras-image-folder-one-step.test against the fixture that
keras_image_folder.py made with TensorFlow (Inputs/image_folder).

  keras_image_folder_check.py loss M.jsonl LOSSES.json MODE [--tol T]
                                   [--differs]
      graphrun's first logged step loss (--metrics M.jsonl) against
      Keras' for --preprocess MODE: within T (relative to the loss where
      it is above 1, absolute below); with --differs, expected to be
      further than T instead (what --fast-decode does).
  keras_image_folder_check.py identity-weights OUT.safetensors
      The identity 1x1 kernel of Inputs/image_folder/identity.json, so
      that graphrun --predict writes the pixels it feeds a model.
  keras_image_folder_check.py pixels P.npy FOLDER EXPECTED.npy [--atol A]
      graphrun --predict images:FOLDER -o P.npy of that identity model (a
      row per image, its pixels flattened) against EXPECTED.npy (what
      image_dataset_from_directory gave, N x H x W x C): the files in the
      same order (P.npy.txt), the pixels within A.
  keras_image_folder_check.py preprocess RAW.npy GOT.npy MODE
      GOT (--predict with --preprocess MODE) against Keras' own
      preprocess_input of RAW (--predict with --preprocess raw): needs
      Keras (lit's %keras_python); unit is x / 255 in NumPy.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def first_loss(path):
    for line in open(path):
        record = json.loads(line)
        if not record.get("eval"):
            return record["step"], record["loss"]
    sys.exit(f"{path}: no step logged")


def loss(args):
    step, got = first_loss(args.metrics)
    want = json.load(open(args.losses))["losses"][args.mode]
    diff = abs(got - want) / max(1.0, abs(want))
    within = step == 1 and diff <= args.tol
    ok = (not within and step == 1) if args.differs else within
    print(f"loss {args.mode}: step {step}: ours {got:.7f}, Keras {want:.7f}, "
          f"difference {diff:.2e} {'beyond' if args.differs else 'within'} "
          f"{args.tol:g}: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def identity_weights(args):
    from safetensors_io import write
    write(args.out, {"identity/kernel":
                     np.eye(3, dtype=np.float32).reshape(1, 1, 3, 3)})


def listed_names(folder):
    """CLASS/NAME of every image, in the order both listings use: classes
    sorted, then names (the fixture's folders are flat)."""
    return [f"{c}/{n}" for c in sorted(os.listdir(folder))
            for n in sorted(os.listdir(os.path.join(folder, c)))]


def pixels(args):
    got = np.load(args.npy)
    want = np.load(args.expected)
    names = ["/".join(p.split("/")[-2:])
             for p in open(args.npy + ".txt").read().splitlines()]
    same_files = names == listed_names(args.folder)
    shape_ok = got.shape == (want.shape[0], want[0].size)
    diff = (float(np.abs(got - want.reshape(got.shape)).max())
            if shape_ok else float("inf"))
    ok = same_files and shape_ok and diff <= args.atol
    print(f"pixels: {got.shape[0]} images, files "
          f"{'in order' if same_files else 'DIFFER'}; largest difference "
          f"from image_dataset_from_directory's {diff:.3g} levels, at most "
          f"{args.atol:g}: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def preprocess(args):
    raw = np.load(args.raw).astype(np.float32)
    got = np.load(args.got)
    if args.mode == "unit":
        want, how = raw / np.float32(255.0), "NumPy's x / 255"
    else:
        import keras
        apps = keras.applications
        fn = {"tf": apps.mobilenet_v2.preprocess_input,
              "torch": apps.densenet.preprocess_input,
              "caffe": apps.vgg16.preprocess_input}[args.mode]
        n = raw.shape[0]
        # Keras' channels_last images: the rows are H x W x 3 flattened.
        want = np.asarray(fn(raw.reshape(n, -1, 3).copy())).reshape(n, -1)
        how = f"keras.applications' preprocess_input (mode {args.mode})"
    diff = float(np.abs(got - want).max())
    ok = got.shape == want.shape and diff == 0
    print(f"preprocess {args.mode}: {'x'.join(map(str, got.shape))} against "
          f"{how}: largest difference {diff:.3g}: "
          f"{'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("loss")
    p.add_argument("metrics")
    p.add_argument("losses")
    p.add_argument("mode")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--differs", action="store_true")
    p = sub.add_parser("identity-weights")
    p.add_argument("out")
    p = sub.add_parser("pixels")
    p.add_argument("npy")
    p.add_argument("folder")
    p.add_argument("expected")
    p.add_argument("--atol", type=float, default=1e-3)
    p = sub.add_parser("preprocess")
    p.add_argument("raw")
    p.add_argument("got")
    p.add_argument("mode", choices=["unit", "tf", "torch", "caffe"])
    args = parser.parse_args()
    return {"loss": loss, "identity-weights": identity_weights,
            "pixels": pixels, "preprocess": preprocess}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
