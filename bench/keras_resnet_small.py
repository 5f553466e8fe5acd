"""A small ResNet (v1, basic blocks) as Keras JSON: the ResNet-style model of
bench/cpu-resnet-vs-pytorch.sh, so that CPU speed is not measured on the
seed CNN alone.

Regenerate examples/resnet_small.json with the bench venv (Keras 3):

    $(bench/keras-venv.sh) bench/keras_resnet_small.py examples/resnet_small.json

Input 32x32x3; a 3x3 conv (32) + batch norm + relu stem, then three stages
of two basic blocks (32, 64, 128 filters; the first block of stages 2 and 3
halves the image with stride 2 and a 1x1 projection shortcut), global
average pooling, Dense(10, softmax); convolutions without bias (the batch
norm after each has one), as ResNet does. Categorical cross-entropy, Adam
0.001 (compile config in the JSON). bench/pytorch_resnet_small.py builds the
same network in PyTorch.
"""
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
from keras import layers  # noqa: E402


def block(x, filters, stride):
    shortcut = x
    y = layers.Conv2D(filters, 3, strides=stride, padding="same",
                      use_bias=False)(x)
    y = layers.BatchNormalization()(y)
    y = layers.Activation("relu")(y)
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    if stride != 1 or x.shape[-1] != filters:
        shortcut = layers.Conv2D(filters, 1, strides=stride,
                                 use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    y = layers.Add()([y, shortcut])
    return layers.Activation("relu")(y)


inputs = keras.Input(shape=(32, 32, 3))
x = layers.Conv2D(32, 3, padding="same", use_bias=False)(inputs)
x = layers.BatchNormalization()(x)
x = layers.Activation("relu")(x)
for filters, stride in [(32, 1), (32, 1), (64, 2), (64, 1), (128, 2),
                        (128, 1)]:
    x = block(x, filters, stride)
x = layers.GlobalAveragePooling2D()(x)
outputs = layers.Dense(10, activation="softmax")(x)
model = keras.Model(inputs, outputs, name="resnet_small")
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001),
              loss="categorical_crossentropy", metrics=["accuracy"])
with open(sys.argv[1], "w") as f:
    f.write(model.to_json())
print(f"{sys.argv[1]}: {model.count_params()} parameters")
