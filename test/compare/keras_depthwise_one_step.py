"""Fixtures for keras-depthwise-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python \
      test/compare/keras_depthwise_one_step.py test/compare/Inputs/depthwise

The depthwise layers MobileNet, EfficientNet and Xception are made of:
DepthwiseConv2D (depth_multiplier 2, same padding, relu), DepthwiseConv2D
(stride 2, same padding, which pads 0 before and 1 after, multiplier 1,
linear), SeparableConv2D (depth multiplier 2, valid padding, tanh), a
grouped Conv2D (groups 2, 1x1), then Flatten and Dense(3, softmax); sparse
categorical cross-entropy, SGD(0.1).
Biases start away from zero. Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every variable before the step, Keras' names
  init.weights.h5            the same, model.save_weights (Keras 3 layout)
  init.h5                    the same, model.save (legacy HDF5 layout)
  expected.safetensors       every variable after one model.fit step
  train-images-idx3-ubyte    the batch: 8 images 8x8x3, uint8 (graphrun
  train-labels-idx1-ubyte    reads them / 255, as the script feeds Keras),
  t10k-*                     labels 0..2; the test split is the same files
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables, write_batch  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(11)
    bias = keras.initializers.RandomUniform(-0.2, 0.2, seed=5)
    L = keras.layers
    inputs = keras.Input((8, 8, 3), name="input_layer")
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same",
                          activation="relu", bias_initializer=bias,
                          name="depthwise_conv2d")(inputs)
    x = L.DepthwiseConv2D(3, strides=2, padding="same",
                          bias_initializer=bias,
                          name="depthwise_conv2d_1")(x)
    x = L.SeparableConv2D(4, 2, depth_multiplier=2, activation="tanh",
                          bias_initializer=bias,
                          name="separable_conv2d")(x)
    x = L.Conv2D(4, 1, groups=2, bias_initializer=bias, name="conv2d")(x)
    x = L.Flatten(name="flatten")(x)
    outputs = L.Dense(3, activation="softmax", name="dense")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")

    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(8, 8, 8, 3), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.uint8)
    write_batch(directory, images, labels)

    with open(os.path.join(directory, "model.json"), "w") as f:
        f.write(model.to_json())
    for layer in model.layers:
        print(layer.name, layer.output.shape)
    before = variables(model)
    write_safetensors(os.path.join(directory, "init.safetensors"), before)
    model.save_weights(os.path.join(directory, "init.weights.h5"))
    model.save(os.path.join(directory, "init.h5"), include_optimizer=False)
    model.fit(images.astype(np.float32) / 255.0, labels.astype(np.int32),
              batch_size=8, epochs=1, shuffle=False, verbose=0)
    after = variables(model)
    write_safetensors(os.path.join(directory, "expected.safetensors"), after)
    for name in sorted(after):
        moved = float(np.abs(after[name] - before[name]).max())
        print("%s: %s, max change %.3g" % (name, after[name].shape, moved))
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
