"""Binary cross-entropy where the predictions saturate, for
keras-bce-saturation.test (Keras' numpy backend writes the models):

  keras_bce_saturation.py DIR

- DIR/sigmoid/: Dense(2) logits, then a sigmoid, on inputs that drive the
  logits to +-40: TensorFlow's backend computes the loss from the logits
  (sigmoid_cross_entropy_with_logits), and so does graph-fuse. The oracle
  is that formula in float64 on the logits Keras' own predict gives.
- DIR/clipped/: the same through hard_sigmoid, whose 0 and 1 are no
  sigmoid's: Keras clips them to [1e-7, 1 - 1e-7] of float32
  (0.99999988), and the oracle is Keras' own evaluate.

Each gets m.keras, eval.npz (x, y) and evaluate.json ({"loss": ...}).
"""

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402

EXAMPLES = 12


def model(activation):
    keras.utils.set_random_seed(3)
    x = keras.Input((5,), name="x")
    h = keras.layers.Dense(6, activation="relu", name="hidden")(x)
    z = keras.layers.Dense(2, name="logits")(h)
    y = keras.layers.Activation(activation, name="probabilities")(z)
    m = keras.Model(x, y)
    m.compile(optimizer=keras.optimizers.SGD(0.01),
              loss=keras.losses.BinaryCrossentropy())
    return m, keras.Model(x, z)


def main():
    directory = sys.argv[1]
    rng = np.random.default_rng(9)
    x = (30.0 * rng.normal(0, 1, (EXAMPLES, 5))).astype(np.float32)
    y = rng.integers(0, 2, (EXAMPLES, 2)).astype(np.float32)
    for name, activation in (("sigmoid", "sigmoid"),
                             ("clipped", "hard_sigmoid")):
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        m, logits = model(activation)
        m.save(os.path.join(out, "m.keras"))
        np.savez(os.path.join(out, "eval.npz"), x=x, y=y)
        if name == "sigmoid":
            z = logits.predict(x, verbose=0).astype(np.float64)
            assert np.abs(z).max() > 20, "the logits do not saturate"
            t = y.astype(np.float64)
            loss = float(np.mean(np.maximum(z, 0) - z * t +
                                 np.log1p(np.exp(-np.abs(z)))))
        else:
            p = m.predict(x, verbose=0)
            assert ((p == 0) | (p == 1)).mean() > 0.5, "nothing saturates"
            loss = float(m.evaluate(x, y, batch_size=EXAMPLES, verbose=0))
        with open(os.path.join(out, "evaluate.json"), "w") as f:
            json.dump({"loss": loss}, f)


if __name__ == "__main__":
    main()
