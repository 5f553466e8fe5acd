"""The Python module's tests: real Keras 3 (its numpy backend: evaluate,
predict, set_weights, save) is the oracle; Fashion-MNIST's IDX files, as
Debian's dataset-fashion-mnist installs them, are the data."""

import gzip
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "numpy")

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


@pytest.fixture(scope="session")
def fashion():
    """(x_train, y_train, x_test, y_test): images as float32 in [0, 1],
    (N, 28, 28, 1); labels uint8."""
    def load(kind):
        x = read_idx(f"{FASHION}/{kind}-images-idx3-ubyte.gz")
        y = read_idx(f"{FASHION}/{kind}-labels-idx1-ubyte.gz")
        return (x.astype(np.float32) / 255.0)[..., None], y
    x_train, y_train = load("train")
    x_test, y_test = load("t10k")
    return x_train, y_train, x_test, y_test


def mlp(keras, loss="sparse_categorical_crossentropy", optimizer="adam"):
    """Keras' multi-GPU guide's MLP, on flat 784-vectors."""
    inputs = keras.Input((784,), name="pixels")
    h = keras.layers.Dense(256, activation="relu")(inputs)
    h = keras.layers.Dense(256, activation="relu")(h)
    outputs = keras.layers.Dense(10, activation="softmax")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def cnn(keras):
    """The seed CNN (the Zalando/TensorFlow article's)."""
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model
