"""graph-import's training flags reach the Keras files graphrun writes.

  keras_override_files.py make DIR    DIR/m.keras (Adam, sparse CE), x.npz
  keras_override_files.py check DIR   Keras opens DIR/out.keras

The model was imported with --optimizer adamax --learning-rate 0.02;
Keras' load_model must give the optimizer trained (its class, rate and
iterations, its variables loaded without a warning) and the loss, and one
more epoch in Keras must equal Keras' own Adamax trained straight through.
"""

import os
import sys
import warnings

# fit is the oracle: Keras' jax backend (the test venv's), not numpy's,
# which cannot train.
os.environ["KERAS_BACKEND"] = "jax"

import keras  # noqa: E402
import numpy as np  # noqa: E402


def make(out):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)),
                              keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01),
                  "sparse_categorical_crossentropy")
    model.save(f"{out}/m.keras")
    rng = np.random.default_rng(3)
    np.savez(f"{out}/x.npz", x=rng.normal(size=(64, 6)).astype("float32"),
             y=rng.integers(0, 3, 64))


def check(out):
    data = np.load(f"{out}/x.npz")
    x, y = data["x"], data["y"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = keras.saving.load_model(f"{out}/out.keras")
    optimizer = ours.optimizer
    print(f"{type(optimizer).__name__} learning_rate "
          f"{float(optimizer.learning_rate):.3g} iterations "
          f"{int(optimizer.iterations)} loss {ours.loss}")
    theirs = keras.saving.load_model(f"{out}/m.keras")
    theirs.compile(keras.optimizers.Adamax(0.02),
                   "sparse_categorical_crossentropy")
    theirs.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    ours.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    error = max(float(np.max(np.abs(a - b)))
                for a, b in zip(theirs.get_weights(), ours.get_weights()))
    assert error < 1e-6, error
    print("one more epoch in Keras = Keras' Adamax trained straight through")


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
