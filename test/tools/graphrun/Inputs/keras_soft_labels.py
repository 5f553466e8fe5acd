"""Soft labels (rows of class probabilities: mixup, distillation) under
categorical cross-entropy, which Keras takes as they are, for
soft-labels.test (Keras' numpy backend writes the model):

  keras_soft_labels.py make DIR
      DIR/m.keras: Dense(4, softmax) on 6 features, CategoricalCrossentropy,
      accuracy, SGD(0.5); DIR/train.npz: 8 examples whose y rows are
      mixtures of two one-hot rows (one row one-hot); DIR/evaluate.json:
      Keras' evaluate of them (in batches of 4).
  keras_soft_labels.py check DIR OURS.weights.h5
      The weights after one step at batch 8, against the formula: with
      p = softmax(x W + b) and rows of y summing to 1, the mean loss's
      gradient is x^T (p - y) / 8 (and the mean of p - y for b).
"""

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402


def model():
    keras.utils.set_random_seed(4)
    x = keras.Input((6,), name="x")
    m = keras.Model(x, keras.layers.Dense(4, activation="softmax",
                                          name="out")(x))
    m.compile(optimizer=keras.optimizers.SGD(0.5),
              loss=keras.losses.CategoricalCrossentropy(),
              metrics=["accuracy"])
    return m


def make(directory):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (8, 6)).astype(np.float32)
    a = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
    b = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
    lam = rng.uniform(0.2, 0.8, (8, 1)).astype(np.float32)
    lam[0] = 1.0  # one row stays one-hot
    y = lam * a + (1 - lam) * b
    m = model()
    m.save(os.path.join(directory, "m.keras"))
    np.savez(os.path.join(directory, "train.npz"), x=x, y=y)
    result = m.evaluate(x, y, batch_size=4, return_dict=True, verbose=0)
    with open(os.path.join(directory, "evaluate.json"), "w") as f:
        json.dump({k: float(v) for k, v in result.items()}, f)


def check(directory, weights):
    m = keras.models.load_model(os.path.join(directory, "m.keras"))
    w0, b0 = (np.asarray(v, np.float64) for v in m.get_weights())
    data = np.load(os.path.join(directory, "train.npz"))
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    z = x @ w0 + b0
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    want_w = w0 - 0.5 * x.T @ (p - y) / len(x)
    want_b = b0 - 0.5 * (p - y).mean(axis=0)
    m.load_weights(weights)
    got_w, got_b = (np.asarray(v, np.float64) for v in m.get_weights())
    err = max(np.abs(got_w - want_w).max(), np.abs(got_b - want_b).max())
    moved = np.abs(want_w - w0).max()
    print("one step on soft labels: worst %.2e of a step of %.2e %s" %
          (err, moved, "PASSED" if err < 1e-5 and moved > 1e-2 else "FAILED"))
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
