"""An adapted Normalization goes back to Keras: Keras keeps a third weight,
its int32 `count`, and refuses a file without it.

  keras_normalization_files.py make DIR    writes DIR/norm.keras, DIR/x.npz
  keras_normalization_files.py check DIR   opens graphrun's files with Keras

check loads DIR/out.keras and DIR/model.h5 (load_model; the legacy file
compiled, as its training_config says) and DIR/out.weights.h5, DIR/out.h5
(load_weights into norm.keras's model) and compares Keras' predict with
graphrun's --predict (DIR/p.npy).
"""

import sys

import keras
import numpy as np


def make(out):
    rng = np.random.default_rng(0)
    norm = keras.layers.Normalization()
    norm.adapt(rng.normal(2, 3, (50, 4)).astype("float32"))
    model = keras.Sequential([keras.Input((4,)), norm,
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.save(f"{out}/norm.keras")
    np.savez(f"{out}/x.npz", x=rng.normal(size=(32, 4)).astype("float32"),
             y=rng.integers(0, 2, 32))


def check(out):
    x = np.load(f"{out}/x.npz")["x"]
    ours = np.load(f"{out}/p.npy")
    models = [("load_model(.keras)", keras.saving.load_model(f"{out}/out.keras"))]
    # --save-model m.h5: the legacy file's training_config compiles it.
    legacy = keras.saving.load_model(f"{out}/model.h5")
    assert legacy.compiled and getattr(legacy.loss, "__name__", legacy.loss) \
        == "sparse_categorical_crossentropy"
    y = np.load(f"{out}/x.npz")["y"]
    legacy.evaluate(x, y, verbose=0)
    models.append(("load_model(model.h5), compiled", legacy))
    for name in ("out.weights.h5", "out.h5"):
        model = keras.saving.load_model(f"{out}/norm.keras")
        model.load_weights(f"{out}/{name}")
        models.append((f"load_weights({name})", model))
    for how, model in models:
        count = [w for w in model.weights if w.path.endswith("/count")]
        error = float(np.max(np.abs(model.predict(x, verbose=0) - ours)))
        assert count and error < 1e-5, (how, error)
        print(f"{how}: Keras predict = graphrun --predict, count "
              f"{int(count[0].numpy())}")


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
