"""Weights files written by real Keras 3, and the values Keras holds, for
KerasWeightsTest.RealKeras (run with the interpreter of a Keras venv, e.g.
bench/keras-venv.sh's; the test skips without one):

  real_keras_weights.py OUTDIR

writes OUTDIR/model.weights.h5 (model.save_weights), OUTDIR/model.keras
(model.save) and OUTDIR/model.h5 (model.save in the legacy HDF5 format),
and OUTDIR/expected.safetensors: every weight as Keras holds it, named
"<layer>/<weight>" as graphrun names variables. The model is the C++
test's: block1_conv1 (Conv2D), bn (BatchNormalization), dense_1 (Dense),
with random weights and batch-norm statistics, so every weight differs.
"""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "compare"))
import safetensors_io  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    inputs = keras.Input((2, 2, 2), name="input_1")
    x = keras.layers.Conv2D(4, 3, padding="same", name="block1_conv1")(inputs)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(3, name="dense_1")(x)
    model = keras.Model(inputs, x, name="functional")

    rng = np.random.default_rng(0)
    for layer in model.layers:
        for w in layer.weights:
            value = rng.standard_normal(tuple(w.shape)).astype(np.float32)
            if "variance" in w.name:
                value = np.abs(value) + 0.5
            w.assign(value)

    model.save_weights(os.path.join(out, "model.weights.h5"))
    model.save(os.path.join(out, "model.keras"))
    model.save(os.path.join(out, "model.h5"))
    expected = {}
    for layer in model.layers:
        for w in layer.weights:
            expected["%s/%s" % (layer.name, w.name)] = np.asarray(
                w.numpy(), dtype=np.float32)
    safetensors_io.write(os.path.join(out, "expected.safetensors"), expected)
    print("keras", keras.__version__, "wrote", len(expected), "weights")


if __name__ == "__main__":
    main(sys.argv[1])
