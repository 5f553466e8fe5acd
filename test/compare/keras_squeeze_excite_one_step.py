"""Fixtures for keras-squeeze-excite-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3.15.1; the test itself needs neither):

  KERAS_BACKEND=tensorflow /work/venvs/keras-tf/bin/python \
      test/compare/keras_squeeze_excite_one_step.py \
      test/compare/Inputs/squeeze_excite

A tiny model through the pieces EfficientNet and MobileNetV3 are made of:
Normalization with scalar mean and variance in its config (the input),
Conv2D, a per-channel Rescaling, Normalization with per-channel statistics
as weights (set away from 0 and 1), a squeeze-and-excite block (GlobalAveragePooling2D(keepdims=True),
two 1x1 Conv2D, a broadcasting Multiply of [N, 6, 6, 4] by [N, 1, 1, 4]),
a broadcasting Subtract (x minus its spatial mean), Normalization with
per-channel mean and variance in its config, MobileNetV3's
hard-sigmoid written as operation layers (ReLU(6)(x + 3.0) * (1 / 6)),
Dropout(noise_shape=(None, 1, 1, 1)) at rate 0 (deterministic: the identity
in TensorFlow as here), Flatten and Dense(3, softmax); sparse categorical
cross-entropy, SGD(0.1). Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every float variable before the step, Keras'
                             names (Normalization's int `count`, which
                             Keras keeps for old saved models, left out)
  init.weights.h5            every variable before the step, as
                             model.save_weights writes it (Keras 3 layout,
                             Normalization's count included)
  expected.safetensors       every float variable after one model.fit step
  train-images-idx3-ubyte    the batch: 8 images 6x6x2, uint8 (graphrun
  train-labels-idx1-ubyte    reads them / 255, as the script feeds Keras),
  t10k-*                     labels 0..2; the test split is the same files
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables, write_batch  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402


def float_variables(model):
    return {k: v for k, v in variables(model).items()
            if not k.endswith("/count")}


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    L = keras.layers
    inputs = keras.Input((6, 6, 2), name="input_layer")
    x = L.Normalization(mean=0.5, variance=0.09, name="normalization")(inputs)
    x = L.Conv2D(4, 3, padding="same", name="conv2d")(x)
    x = L.Rescaling([1.0, 0.5, 2.0, -1.0], offset=[0.1, 0.0, 0.0, -0.2],
                    name="rescaling")(x)
    norm = L.Normalization(name="normalization_1")
    x = norm(x)
    se = L.GlobalAveragePooling2D(keepdims=True, name="squeeze")(x)
    se = L.Conv2D(2, 1, activation="relu", name="reduce")(se)
    se = L.Conv2D(4, 1, activation="sigmoid", name="expand")(se)
    x = L.Multiply(name="excite")([x, se])
    mean = L.GlobalAveragePooling2D(keepdims=True, name="spatial_mean")(x)
    x = L.Subtract(name="centre")([x, mean])
    x = L.Normalization(mean=[0.1, -0.1, 0.0, 0.2],
                        variance=[0.25, 4.0, 1.0, 0.5],
                        name="normalization_2")(x)
    c = L.Conv2D(3, 1, name="conv2d_1")(x)
    h = L.ReLU(6.0, name="re_lu")(c + 3.0) * (1.0 / 6.0)
    x = L.Multiply(name="gate")([c, h])
    x = L.Dropout(0.0, noise_shape=(None, 1, 1, 1), name="drop")(x)
    x = L.Flatten(name="flatten")(x)
    outputs = L.Dense(3, activation="softmax", name="dense")(x)
    model = keras.Model(inputs, outputs)
    norm.set_weights([
        np.array([0.2, -0.3, 0.1, 0.0], np.float32),   # mean
        np.array([0.5, 2.0, 0.04, 1.0], np.float32),   # variance
        np.array(0, np.int64),                         # count
    ])
    # The layer computes from copies it makes when built (or weights load):
    # set_weights alone would leave them at 0 and 1.
    norm.finalize_state()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")

    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(8, 6, 6, 2), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.uint8)
    write_batch(directory, images, labels)

    with open(os.path.join(directory, "model.json"), "w") as f:
        f.write(model.to_json())
    before = float_variables(model)
    write_safetensors(os.path.join(directory, "init.safetensors"), before)
    model.save_weights(os.path.join(directory, "init.weights.h5"))
    feed = images.astype(np.float32) / 255.0
    probe = keras.Model(inputs, c)
    cv = np.asarray(probe(feed))
    print("c: %.1f%% > 3, %.1f%% < -3" % (100 * (cv > 3).mean(),
                                          100 * (cv < -3).mean()))
    model.fit(feed, labels.astype(np.int32), batch_size=8, epochs=1,
              shuffle=False, verbose=0)
    after = float_variables(model)
    write_safetensors(os.path.join(directory, "expected.safetensors"), after)
    for name in sorted(after):
        moved = float(np.abs(after[name] - before[name]).max())
        print("%s: %s, max change %.3g" % (name, after[name].shape, moved))
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
