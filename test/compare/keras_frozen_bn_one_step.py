"""Fixtures for keras-frozen-bn-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/main/build/keras-venv/bin/python \
      test/compare/keras_frozen_bn_one_step.py test/compare/Inputs/frozen_bn

Keras' fine-tuning recipe: a trainable Conv2D below a frozen
BatchNormalization (trainable = False, so it runs in inference mode with its
moving statistics, in fit too), then Flatten and Dense(3, softmax); sparse
categorical cross-entropy, SGD(0.1). Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every variable before the step, Keras' names
  expected.safetensors       every variable after one model.fit step
  train-images-idx3-ubyte    the batch: 8 images 6x6x2, uint8 (graphrun
  train-labels-idx1-ubyte    reads them / 255, as the script feeds Keras),
  t10k-*                     labels 0..2; the test split is the same files

The batch norm's gamma, beta and moving statistics are set away from 1 and
0 so that its gradient, dy * gamma / sqrt(moving_variance + epsilon), is
not the identity: a rule that ignored it (or used batch statistics) would
move conv2d's kernel differently.
"""

import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import write as write_safetensors  # noqa: E402


def write_idx(path, array):
    with open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x08, array.ndim))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def write_batch(directory, images, labels):
    """The batch as Fashion-MNIST's IDX files, train and test split alike."""
    for split in ("train", "t10k"):
        write_idx(os.path.join(directory, split + "-images-idx3-ubyte"),
                  images)
        write_idx(os.path.join(directory, split + "-labels-idx1-ubyte"),
                  labels)


def variables(model):
    out = {}
    for layer in model.layers:
        for w in layer.weights:
            out[layer.name + "/" + w.name] = np.asarray(
                w.numpy(), dtype=np.float32)
    return out


def write_one_step(directory, model, keras_weights=False, read=None):
    """The one-step fixture of a compiled `model` of input (6, 6, 2) and 3
    classes: the fixed batch of 8 (IDX files), model.json, the variables
    before (init.safetensors; with `keras_weights` also Keras' own
    init.weights.h5, for --init-weights) and after one model.fit step on it
    (expected.safetensors), as `read` names them (default: variables).
    Prints how far each variable moved."""
    read = read or variables
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(8, 6, 6, 2), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.uint8)
    write_batch(directory, images, labels)

    with open(os.path.join(directory, "model.json"), "w") as f:
        f.write(model.to_json())
    before = read(model)
    write_safetensors(os.path.join(directory, "init.safetensors"), before)
    if keras_weights:
        model.save_weights(os.path.join(directory, "init.weights.h5"))
    model.fit(images.astype(np.float32) / 255.0, labels.astype(np.int32),
              batch_size=8, epochs=1, shuffle=False, verbose=0)
    after = read(model)
    write_safetensors(os.path.join(directory, "expected.safetensors"), after)
    for name in sorted(after):
        moved = float(np.abs(after[name] - before[name]).max())
        print("%s: %s, max change %.3g" % (name, after[name].shape, moved))


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    inputs = keras.Input((6, 6, 2), name="input_layer")
    x = keras.layers.Conv2D(3, 3, name="conv2d")(inputs)
    bn = keras.layers.BatchNormalization(name="batch_normalization")
    x = bn(x)
    x = keras.layers.Flatten(name="flatten")(x)
    outputs = keras.layers.Dense(3, activation="softmax", name="dense")(x)
    model = keras.Model(inputs, outputs)
    bn.set_weights([
        np.array([1.5, 0.5, -0.8], np.float32),    # gamma
        np.array([0.1, -0.2, 0.3], np.float32),    # beta
        np.array([0.05, -0.1, 0.2], np.float32),   # moving_mean
        np.array([0.4, 2.0, 0.09], np.float32),    # moving_variance
    ])
    bn.trainable = False
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")

    write_one_step(directory, model)
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
