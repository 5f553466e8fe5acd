"""Fixtures for keras-layer-norm-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3.15.1; the test itself needs neither):

  KERAS_BACKEND=tensorflow /work/venvs/keras-tf/bin/python \
      test/compare/keras_layer_norm_one_step.py test/compare/Inputs/layer_norm

A tiny ConvNeXt-like model: Conv2D, LayerNormalization (epsilon 1e-6,
gamma and beta set away from 1 and 0), Dense(8) applied to the rank-4
tensor (a matmul over the last axis, as ConvNeXt's pointwise layers),
gelu (Keras 3's default, approximate=False, the erf form), Dense(4),
LayerNormalization(center=False) and LayerNormalization(scale=False), then
Flatten and Dense(3, softmax); sparse categorical cross-entropy, SGD(0.1).
Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every variable before the step, Keras' names
  init.weights.h5            the same, as model.save_weights wrote it
  expected.safetensors       every variable after one model.fit step
  train-images-idx3-ubyte    the batch: 8 images 6x6x2, uint8 (graphrun
  train-labels-idx1-ubyte    reads them / 255, as the script feeds Keras),
  t10k-*                     labels 0..2; the test split is the same files
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import write_one_step  # noqa: E402


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    L = keras.layers
    inputs = keras.Input((6, 6, 2), name="input_layer")
    x = L.Conv2D(4, 3, padding="same", name="conv2d")(inputs)
    ln = L.LayerNormalization(epsilon=1e-6, name="layer_normalization")
    x = ln(x)
    x = L.Dense(8, activation="gelu", name="dense")(x)
    x = L.Dense(4, name="dense_1")(x)
    x = L.LayerNormalization(center=False, name="layer_normalization_1")(x)
    x = L.LayerNormalization(scale=False, name="layer_normalization_2")(x)
    x = L.Flatten(name="flatten")(x)
    outputs = L.Dense(3, activation="softmax", name="dense_2")(x)
    model = keras.Model(inputs, outputs)
    ln.set_weights([
        np.array([1.5, 0.5, -0.8, 1.1], np.float32),   # gamma
        np.array([0.1, -0.2, 0.3, 0.0], np.float32),   # beta
    ])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")

    # Keras 3's own weight file of the same values, for --init-weights.
    write_one_step(directory, model, keras_weights=True)
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
