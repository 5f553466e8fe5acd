"""Fixtures for keras-app-layers-one-step.test: one SGD step in TensorFlow.

Regenerate (TensorFlow 2.21, Keras 3.15.1; the test itself needs neither):

  KERAS_BACKEND=tensorflow /work/venvs/keras-tf/bin/python \\
      test/compare/keras_app_layers_one_step.py test/compare/Inputs/app_layers

keras.applications' own layers and Conv2DTranspose in a tiny model:
Conv2D, ConvNeXt's LayerScale (gamma set away from init_values),
StochasticDepth(0) (the identity), InceptionResNetV2's CustomScaleLayer
(a + b * 0.17), Conv2DTranspose(strides 2, same), Conv2DTranspose(kernel 2,
strides 3, valid: a kernel smaller than the stride), then Flatten and
Dense(3, softmax); sparse categorical cross-entropy, SGD(3.0): a large
step, so that every variable moves well beyond the test's tolerance.
Writes to DIR:

  model.json                 model.to_json(), compile config included
  init.safetensors           every variable before the step, Keras' names
                             (LayerScale's lone variable as <layer>/gamma,
                             the name graph-import gives it)
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


def variables(model):
    out = {}
    for layer in model.layers:
        for w in layer.weights:
            # Keras names LayerScale's variable "variable" (numbered when
            # there are several in one session); graph-import calls it gamma.
            name = "gamma" if type(layer).__name__ == "LayerScale" else w.name
            out[layer.name + "/" + name] = np.asarray(w.numpy(),
                                                      dtype=np.float32)
    return out


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf
    from keras.src.applications.convnext import LayerScale, StochasticDepth
    from keras.src.applications.inception_resnet_v2 import CustomScaleLayer

    keras.utils.set_random_seed(7)
    L = keras.layers
    inputs = keras.Input((6, 6, 2), name="input_layer")
    a = L.Conv2D(4, 3, padding="same", name="conv2d")(inputs)
    scale = LayerScale(0.5, 4, name="layer_scale")
    b = scale(a)
    b = StochasticDepth(0.0, name="stochastic_depth")(b)
    b = L.Conv2D(4, 1, activation="relu", name="conv2d_1")(b)
    x = CustomScaleLayer(0.17, name="custom_scale_layer")([a, b])
    x = L.Conv2DTranspose(3, 3, strides=2, padding="same",
                          name="conv2d_transpose")(x)
    x = L.Conv2DTranspose(2, 2, strides=3, activation="relu",
                          name="conv2d_transpose_1")(x)
    x = L.Flatten(name="flatten")(x)
    outputs = L.Dense(3, activation="softmax", name="dense")(x)
    model = keras.Model(inputs, outputs)
    scale.set_weights([np.array([0.15, 0.05, -0.08, 0.11], np.float32)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=3.0),
                  loss="sparse_categorical_crossentropy")

    # Keras 3's own weight file of the same values, for --init-weights.
    write_one_step(directory, model, keras_weights=True, read=variables)
    print("output", model.output.shape)
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
