"""Arrays Keras' fit and evaluate take and graphrun took wrongly, with real
Keras (its numpy backend) as the oracle, for arrays-keras-shapes.test:

  keras_array_shapes.py make DIR
      DIR/ignore/: m.keras (SparseCategoricalCrossentropy(ignore_class=-1)),
      train.npz, whose last rows (the --validation-split ones) hold -1
      labels too;
      DIR/scalar/: m.keras (an input of shape (1,), two outputs), eval.npz
      with that input as (N,), which Keras expands to (N, 1), and
      evaluate.json, Keras' evaluation of it.
  keras_array_shapes.py check-split DIR/ignore OURS.weights.h5 LOG.csv
      Keras' evaluation of the weights graphrun trained on the rows
      --validation-split 0.3 held out: val_loss and val_accuracy of the
      CSV log's last row within 1e-5, PASSED or FAILED.
"""

import csv
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402

EXAMPLES, SPLIT = 20, 0.3


def make(directory):
    rng = np.random.default_rng(5)
    keras.utils.set_random_seed(5)
    out = os.path.join(directory, "ignore")
    os.makedirs(out, exist_ok=True)
    x = keras.Input((4,), name="x")
    y = keras.layers.Dense(3, activation="softmax", name="out")(
        keras.layers.Dense(6, activation="tanh")(x))
    m = keras.Model(x, y)
    m.compile(optimizer=keras.optimizers.SGD(0.1),
              loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=-1),
              metrics=["accuracy"])
    m.save(os.path.join(out, "m.keras"))
    labels = rng.integers(0, 3, EXAMPLES).astype(np.int64)
    labels[[2, 9, 15, 18]] = -1  # in the training and the held-out rows
    np.savez(os.path.join(out, "train.npz"),
             x=rng.normal(0, 1, (EXAMPLES, 4)).astype(np.float32), y=labels)

    out = os.path.join(directory, "scalar")
    os.makedirs(out, exist_ok=True)
    t = keras.Input((1,), name="t")
    h = keras.layers.Dense(5, activation="tanh")(t)
    m = keras.Model(t, {"cls": keras.layers.Dense(3, activation="softmax",
                                                  name="cls")(h),
                        "reg": keras.layers.Dense(1, name="reg")(h)})
    m.compile(optimizer=keras.optimizers.SGD(0.1),
              loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"})
    m.save(os.path.join(out, "m.keras"))
    data = {"t": rng.normal(0, 1, EXAMPLES).astype(np.float32),
            "cls": rng.integers(0, 3, EXAMPLES).astype(np.int64),
            "reg": rng.normal(0, 1, (EXAMPLES, 1)).astype(np.float32)}
    np.savez(os.path.join(out, "eval.npz"), **data)
    result = m.evaluate(data["t"], {"cls": data["cls"], "reg": data["reg"]},
                        batch_size=8, return_dict=True, verbose=0)
    with open(os.path.join(out, "evaluate.json"), "w") as f:
        json.dump({k: float(v) for k, v in result.items()}, f)


def check_split(directory, weights, log):
    m = keras.models.load_model(os.path.join(directory, "m.keras"))
    m.load_weights(weights)
    data = np.load(os.path.join(directory, "train.npz"))
    # Keras' validation_split: the last rows, from floor(N (1 - split)) on.
    first = int(EXAMPLES * (1.0 - SPLIT))
    # In batches of the plan's 4, as fit validates: a batch's loss is the
    # mean over its rows that are not ignored.
    want = m.evaluate(data["x"][first:], data["y"][first:], batch_size=4,
                      return_dict=True, verbose=0)
    with open(log) as f:
        got = list(csv.DictReader(f))[-1]
    failed = 0
    for key in ("loss", "accuracy"):
        mine, value = float(got["val_" + key]), float(want[key])
        ok = abs(mine - value) <= 1e-5 * max(1.0, abs(value))
        failed += 0 if ok else 1
        print("val_%s: %.7g vs Keras %.7g %s" %
              (key, mine, value, "ok" if ok else "FAILED"))
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check_split(*sys.argv[2:5]))
