"""Real Keras reads what graphrun wrote: --save-model m.keras,
--save-weights w.weights.h5 and w.h5 of one run.

Keras' evaluate on the Fashion-MNIST test set must equal graphrun's --eval
(the last {"eval": true} record of its --metrics file) within --tol; the
.keras archive's optimizer state must be the run's (iterations = the
checkpoint's step, Adam's momentum and velocity = its slots); the legacy
.h5 must have tf.keras 2's layout (read with h5py). Prints one line per
check, "ok" last.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import zipfile

import h5py
import keras
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "compare"))
import safetensors_io  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    _, _, ndim = struct.unpack(">HBB", blob[:4])
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob[4 + 4 * ndim:], np.uint8).reshape(dims)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keras", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--legacy", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--step", type=int, required=True)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()

    x = read_idx(os.path.join(a.data_dir, "t10k-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(a.data_dir, "t10k-labels-idx1-ubyte.gz"))
    x = (x.astype(np.float32) / 255.0).reshape(-1, 28, 28, 1)
    ours = [json.loads(line) for line in open(a.metrics)]
    ours = [r for r in ours if r.get("eval")][-1]

    model = keras.models.load_model(a.keras)
    labels = y.astype(np.int64)
    if model.output_shape[-1] and "sparse" not in str(model.loss):
        labels = keras.utils.to_categorical(labels, model.output_shape[-1])

    def check(name, m):
        got = m.evaluate(x, labels, batch_size=500, verbose=0, return_dict=True)
        for key in ("loss", "accuracy"):
            if abs(got[key] - ours[key]) > a.tol:
                fail(f"{name}: Keras' {key} {got[key]:.8f}, graphrun's "
                     f"{ours[key]:.8f}")
        print(f"{name}: Keras evaluate = graphrun --eval "
              f"(loss {got['loss']:.6f}, accuracy {got['accuracy']:.4f})")

    check("load_model(.keras)", model)

    # The optimizer's state, as a resumed fit() would use it.
    tensors = safetensors_io.read(a.checkpoint)
    opt = model.optimizer
    step = int(np.asarray(opt.iterations))
    if step != a.step:
        fail(f"optimizer.iterations {step}, the run's step {a.step}")
    slots = {"m": opt._momentums, "v": opt._velocities}
    for i, var in enumerate(model.trainable_variables):
        ours_name = var.path
        for slot, values in slots.items():
            mine = tensors[ours_name + "/" + slot]
            theirs = np.asarray(values[i])
            if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=0, atol=0):
                fail(f"{ours_name}/{slot}: the .keras optimizer slot differs "
                     "from the run's checkpoint")
    print(f"load_model(.keras): optimizer iterations {step}, "
          f"{2 * len(model.trainable_variables)} Adam slots equal the checkpoint's")

    config = json.loads(zipfile.ZipFile(a.keras).read("config.json"))
    for path in (a.weights, a.legacy):
        fresh = keras.models.model_from_json(json.dumps(config))
        fresh.compile(loss=model.loss, metrics=["accuracy"])
        fresh.load_weights(path)
        check(f"load_weights({os.path.basename(path)})", fresh)

    # tf.keras 2's layout, which its load_weights reads by position.
    with h5py.File(a.legacy, "r") as f:
        g = f["model_weights"]
        names = [n.decode() for n in g.attrs["layer_names"]]
        if names != [layer.name for layer in model.layers]:
            fail(f"layer_names {names}")
        for layer in model.layers:
            wn = g[layer.name].attrs["weight_names"]
            wn = [n.decode() for n in wn] if len(wn) else []
            if len(wn) != len(layer.weights):
                fail(f"{layer.name}: {len(wn)} weight_names, Keras has "
                     f"{len(layer.weights)}")
            for n, w in zip(wn, layer.weights):
                if g[layer.name][n].shape != tuple(w.shape):
                    fail(f"{layer.name}/{n}: shape {g[layer.name][n].shape}")
    print(f"legacy .h5: model_weights holds {len(names)} layers in "
          "tf.keras 2's layout")
    print("ok")


if __name__ == "__main__":
    main()
