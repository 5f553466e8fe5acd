"""A functional model of two inputs, fed from an .npz of two named arrays.

  two_inputs.py make DIR     the model (DIR/model.keras), DIR/train.npz and
                             DIR/test.npz (arrays 'pixels', 'hint', 'y')
  two_inputs.py check DIR METRICS WEIGHTS
                             Keras' evaluate of the model with WEIGHTS on
                             DIR/test.npz equals graphrun's last --eval
                             record in METRICS within 1e-5

The second input carries a noisy copy of the label, so that a model fed one
input's array in the other's place, or the columns of one into the other,
evaluates differently from Keras.
"""

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")
import keras  # noqa: E402
import numpy as np  # noqa: E402


def make(out):
    rng = np.random.default_rng(1)
    keras.utils.set_random_seed(1)
    pixels = keras.Input((12,), name="pixels")
    hint = keras.Input((3,), name="hint")
    h = keras.layers.Dense(16, activation="relu")(pixels)
    h = keras.layers.Concatenate()([h, keras.layers.Dense(4)(hint)])
    model = keras.Model([pixels, hint], keras.layers.Dense(3)(h))
    model.compile(optimizer="adam", metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.save(os.path.join(out, "model.keras"))
    for name, n in (("train", 600), ("test", 250)):
        y = rng.integers(0, 3, n)
        np.savez(os.path.join(out, f"{name}.npz"),
                 pixels=rng.normal(0, 1, (n, 12)).astype(np.float32),
                 hint=(np.eye(3)[y] + rng.normal(0, 0.7, (n, 3))),  # float64
                 y=y.astype(np.int64))


def check(out, metrics, weights):
    model = keras.saving.load_model(os.path.join(out, "model.keras"))
    model.load_weights(weights)
    with np.load(os.path.join(out, "test.npz")) as f:
        x = {"pixels": f["pixels"], "hint": f["hint"]}
        y = f["y"]
    theirs = model.evaluate(x, y, batch_size=50, verbose=0, return_dict=True)
    ours = [r for r in map(json.loads, open(metrics)) if r.get("eval")][-1]
    for key in ("loss", "accuracy"):
        if abs(ours[key] - theirs[key]) > 1e-5:
            sys.exit(f"{key}: graphrun {ours[key]}, Keras {theirs[key]}")
    print(f"Keras evaluate = graphrun --eval on two inputs: loss "
          f"{theirs['loss']:.5f}, accuracy {theirs['accuracy']:.4f}")


if __name__ == "__main__":
    make(sys.argv[2]) if sys.argv[1] == "make" else check(*sys.argv[2:5])
