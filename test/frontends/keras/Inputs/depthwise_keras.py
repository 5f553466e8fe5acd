"""Writes depthwise.json for depthwise.test with real Keras, and prints
each layer's output shape (the test checks the importer's against them).

  /work/venvs/keras-tf/bin/python test/frontends/keras/Inputs/depthwise_keras.py \
      test/frontends/keras/Inputs/depthwise.json

(TensorFlow 2.21, Keras 3.15; the test itself needs neither.)
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402

L = keras.layers
inputs = keras.Input((9, 9, 4), name="image")
x = L.DepthwiseConv2D(3, padding="same", name="dw")(inputs)
x = L.DepthwiseConv2D((3, 2), strides=2, padding="same", depth_multiplier=2,
                      use_bias=False,
                      depthwise_initializer=keras.initializers.HeNormal(seed=7),
                      name="dw_s2_m2")(x)
x = L.DepthwiseConv2D(3, dilation_rate=2, padding="same", activation="relu",
                      bias_initializer=keras.initializers.Constant(0.1),
                      name="dw_d2")(x)
x = L.SeparableConv2D(6, 3, strides=2, padding="same", depth_multiplier=2,
                      activation="relu", name="sep")(x)
x = L.SeparableConv2D(5, 2, use_bias=False,
                      pointwise_initializer=keras.initializers.HeUniform(),
                      name="sep_valid")(x)
x = L.Conv2D(10, 1, groups=5, name="grouped")(x)
x = L.GlobalAveragePooling2D(name="gap")(x)
outputs = L.Dense(3, activation="softmax", name="probs")(x)
model = keras.Model(inputs, outputs, name="depthwise")
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
with open(sys.argv[1], "w") as f:
    f.write(model.to_json(indent=2))
for layer in model.layers:
    print(layer.name, tuple(layer.output.shape),
          [tuple(w.shape) for w in layer.weights])
