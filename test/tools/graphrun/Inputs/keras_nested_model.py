"""Writes, with real Keras 3, the JSON of a model that nests a Sequential
(its own layer names) inside a Functional: keras-files.test's nested case.

    keras_nested_model.py OUT.json
"""

import sys

import keras

inner = keras.Sequential(
    [keras.Input((4,)),
     keras.layers.Dense(8, activation="relu", name="inner_dense"),
     keras.layers.BatchNormalization(name="inner_bn")], name="block")
x = keras.Input((4,), name="features")
model = keras.Model(x, keras.layers.Dense(2, name="head")(inner(x)))
model.compile(keras.optimizers.Adam(1e-3), "mse", metrics=["mae"])
with open(sys.argv[1], "w") as f:
    f.write(model.to_json())
