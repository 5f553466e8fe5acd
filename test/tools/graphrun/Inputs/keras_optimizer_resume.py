"""Real Keras (jax backend) trains a small model one epoch, saves it as a
.keras file (optimizer state included: Adam's iterations and slots), then
trains a second epoch: the weights graphrun must reach when it goes on
from the file.

  keras_optimizer_resume.py OUT_DIR OPTIMIZER

Writes OUT_DIR/data.npz (x, y: 44 examples, 6 features, 2 targets),
OUT_DIR/m.keras (after epoch 1: 6 steps of 8, the last of 4) and
OUT_DIR/expected.safetensors (after epoch 2, named as graphrun names its
variables, layer/weight). fit runs with shuffle=False, in file order.
OPTIMIZER is adam, adamax, rmsprop (momentum 0.9), sgd (momentum 0.9),
adam_decay (weight_decay 0.01), nadam or named (Adam named by the user).
"""

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "compare"))
import safetensors_io  # noqa: E402


def main():
    out, which = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(7)
    x = rng.normal(size=(44, 6)).astype(np.float32)
    y = rng.normal(size=(44, 2)).astype(np.float32)
    np.savez(os.path.join(out, "data.npz"), x=x, y=y)
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((6,)),
                              keras.layers.Dense(5, activation="tanh"),
                              keras.layers.Dense(2)])
    optimizer = {
        "adam": lambda: keras.optimizers.Adam(0.01),
        "adamax": lambda: keras.optimizers.Adamax(0.01),
        "rmsprop": lambda: keras.optimizers.RMSprop(0.01, momentum=0.9),
        "sgd": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
        # Keras names this one "adam", the plan's kind "adam_w" (its decay).
        "adam_decay": lambda: keras.optimizers.Adam(0.01, weight_decay=0.01),
        "nadam": lambda: keras.optimizers.Nadam(0.01),
        # A name of the user's: Keras' loading goes by the count alone.
        "named": lambda: keras.optimizers.Adam(0.01, name="my_optimizer"),
    }[which]()
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(os.path.join(out, "m.keras"))
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    tensors = {}
    for layer in model.layers:
        for weight in layer.weights:
            tensors[f"{layer.name}/{weight.name}"] = np.asarray(weight.numpy())
    safetensors_io.write(os.path.join(out, "expected.safetensors"), tensors)
    print(f"{which}: iterations {int(model.optimizer.iterations.numpy())}")


if __name__ == "__main__":
    main()
