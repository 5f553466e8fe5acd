"""Fixtures for keras-new-layers-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3.15.1; the test itself needs neither):

  KERAS_BACKEND=tensorflow /work/venvs/keras-tf/bin/python \
      test/compare/keras_new_layers_one_step.py test/compare/Inputs/new_layers

A tiny model through the layers of issue 14: Conv2D, Rescaling,
UpSampling2D, ZeroPadding2D,
ReLU(max_value=6), hard_swish, a second Conv2D, Multiply, Subtract, swish,
Average, hard_sigmoid, ReLU(max_value, negative_slope, threshold), Maximum,
Cropping2D, Permute, then Flatten and Dense(3, softmax); sparse categorical
cross-entropy, SGD(0.1). The Rescaling spreads the first convolution's
output over [-10, 10] or so, so that the ReLU caps, hard_swish's and
hard_sigmoid's ends and the thresholds are all crossed. Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every variable before the step, Keras' names
  expected.safetensors       every variable after one model.fit step
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


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    L = keras.layers
    inputs = keras.Input((6, 6, 2), name="input_layer")
    x = L.Conv2D(3, 3, padding="same", name="conv2d")(inputs)
    x = L.Rescaling(10.0, offset=1.0, name="rescaling")(x)
    x = L.UpSampling2D((2, 1), name="up_sampling2d")(x)
    x = L.ZeroPadding2D(((1, 0), (0, 2)), name="zero_padding2d")(x)
    a = L.ReLU(max_value=6.0, name="re_lu")(x)
    b = L.Activation("hard_swish", name="hard_swish")(x)
    c = L.Conv2D(3, 1, bias_initializer="random_normal", name="conv2d_1")(x)
    m = L.Multiply(name="multiply")([a, c])
    s = L.Subtract(name="subtract")([m, b])
    w = L.Activation("swish", name="swish")(c)
    avg = L.Average(name="average")([s, w])
    hs = L.Activation("hard_sigmoid", name="hard_sigmoid")(c)
    r = L.ReLU(max_value=3.0, negative_slope=0.1, threshold=0.5,
               name="re_lu_1")(c)
    mx = L.Maximum(name="maximum")([avg, hs, r])
    y = L.Cropping2D(((1, 1), (1, 0)), name="cropping2d")(mx)
    y = L.Permute((2, 1, 3), name="permute")(y)
    y = L.Flatten(name="flatten")(y)
    outputs = L.Dense(3, activation="softmax", name="dense")(y)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")

    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(8, 6, 6, 2), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.uint8)
    write_batch(directory, images, labels)

    with open(os.path.join(directory, "model.json"), "w") as f:
        f.write(model.to_json())
    before = variables(model)
    write_safetensors(os.path.join(directory, "init.safetensors"), before)
    feed = images.astype(np.float32) / 255.0
    # How much of each kink's both sides the batch reaches.
    probe = keras.Model(inputs, [x, c])
    xv, cv = (np.asarray(t) for t in probe(feed))
    print("x: %.1f%% > 6, %.1f%% < -3, %.1f%% in (-3, 3); c: %.1f%% > 3, "
          "%.1f%% < -3" % (100 * (xv > 6).mean(), 100 * (xv < -3).mean(),
                           100 * ((xv > -3) & (xv < 3)).mean(),
                           100 * (cv > 3).mean(), 100 * (cv < -3).mean()))
    model.fit(feed, labels.astype(np.int32), batch_size=8, epochs=1,
              shuffle=False, verbose=0)
    after = variables(model)
    write_safetensors(os.path.join(directory, "expected.safetensors"), after)
    for name in sorted(after):
        moved = float(np.abs(after[name] - before[name]).max())
        print("%s: %s, max change %.3g" % (name, after[name].shape, moved))
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
