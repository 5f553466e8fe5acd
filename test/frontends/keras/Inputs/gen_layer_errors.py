"""Writes the Inputs/*.json of the error_* tests for the layers of issue 14.

Each is a small Keras 3 model's model.to_json() (Keras 3.15.1, the TF
backend), with one field then edited to a value the importer refuses; the
tf.keras 2 one edits the tf.keras 2.15 fixture fixtures/tf2/
fashion_mnist_cnn.json. Run from the repository root:

  KERAS_BACKEND=tensorflow /work/venvs/keras-tf/bin/python \\
      test/frontends/keras/Inputs/gen_layer_errors.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, model_json):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(model_json, f, indent=2)
        f.write("\n")
    print("wrote", name)


def layer(model_json, class_name):
    for entry in model_json["config"]["layers"]:
        if entry["class_name"] == class_name:
            return entry["config"]
    raise KeyError(class_name)


def main():
    import keras
    L = keras.layers

    def one_layer(shape, make):
        keras.backend.clear_session()
        inputs = keras.Input(shape)
        return json.loads(keras.Model(inputs, make(inputs)).to_json())

    m = one_layer((5, 6, 2), L.ZeroPadding2D(1))
    layer(m, "ZeroPadding2D")["data_format"] = "channels_first"
    write("zero_padding_channels_first.json", m)

    m = one_layer((5, 6, 2), L.ZeroPadding2D(1))
    layer(m, "ZeroPadding2D")["padding"] = [1, 2, 3]
    write("zero_padding_form.json", m)

    m = one_layer((5, 6, 2), L.ZeroPadding2D(1))
    layer(m, "ZeroPadding2D")["padding"] = [[1, -1], [0, 0]]
    write("zero_padding_negative.json", m)

    # Keras itself refuses this one when the model is built.
    m = one_layer((5, 6, 2), L.Cropping2D(1))
    layer(m, "Cropping2D")["cropping"] = [[2, 3], [0, 0]]
    write("cropping_too_much.json", m)

    m = one_layer((6,), L.ReLU(max_value=6.0))
    layer(m, "ReLU")["max_value"] = -1.0
    write("relu_negative.json", m)

    m = one_layer((6,), L.Rescaling(0.5))
    layer(m, "Rescaling")["scale"] = [0.5, 0.25]
    write("rescaling_vector.json", m)

    m = one_layer((5, 6, 2), L.Permute((2, 1, 3)))
    layer(m, "Permute")["dims"] = [1, 1, 3]
    write("permute_dims.json", m)

    m = one_layer((5, 6, 2), L.UpSampling2D(interpolation="bilinear"))
    write("upsampling_bilinear.json", m)

    # LayerNormalization: the last axis only, and no rms_scaling.
    m = one_layer((5, 6, 2), L.LayerNormalization(axis=1))
    write("layer_norm_axis.json", m)

    m = one_layer((5, 6, 2), L.LayerNormalization(axis=[1, 2, 3]))
    write("layer_norm_axes.json", m)

    m = one_layer((5, 6, 2), L.LayerNormalization())
    layer(m, "LayerNormalization")["rms_scaling"] = True
    write("layer_norm_rms_scaling.json", m)

    # keras.applications' own layers: StochasticDepth only at rate 0, and
    # LayerScale's projection_dim is the input's last axis.
    from keras.src.applications.convnext import LayerScale, StochasticDepth
    m = one_layer((5, 6, 2), StochasticDepth(0.1))
    write("stochastic_depth_rate.json", m)

    m = one_layer((5, 6, 2), LayerScale(1e-6, 2))
    layer(m, "LayerScale")["projection_dim"] = 3
    write("layer_scale_projection_dim.json", m)

    # Conv2DTranspose: no output_padding, no dilation.
    m = one_layer((5, 6, 2), L.Conv2DTranspose(3, 3, strides=2,
                                                output_padding=1))
    write("conv2d_transpose_output_padding.json", m)

    m = one_layer((5, 6, 2), L.Conv2DTranspose(3, 3, dilation_rate=2))
    write("conv2d_transpose_dilation.json", m)

    keras.backend.clear_session()
    a, b, c = (keras.Input((4,)) for _ in range(3))
    # Keras' Subtract refuses 3 inputs: an Add of 3, renamed.
    m = keras.Model([a, b, c], L.Add()([a, b, c])).to_json()
    m = json.loads(m.replace('"Add"', '"Subtract"').replace('"add"',
                                                            '"subtract"'))
    write("subtract_three.json", m)

    keras.backend.clear_session()
    a, b = keras.Input((4,)), keras.Input((4,))
    m = json.loads(keras.Model([a, b], L.Multiply()([a, b])).to_json())
    m["config"]["layers"][1]["config"]["batch_shape"] = [None, 5]
    write("multiply_shape.json", m)

    m = one_layer((5, 6, 2), L.RandomRotation(0.1))
    layer(m, "RandomRotation")["fill_mode"] = "mirror"
    write("random_fill_mode.json", m)

    m = one_layer((5, 6, 2), L.RandomFlip())
    layer(m, "RandomFlip")["mode"] = "diagonal"
    write("random_flip_mode.json", m)

    m = one_layer((5, 6, 2), L.RandomZoom(0.1))
    layer(m, "RandomZoom")["height_factor"] = [0.1, 0.2, 0.3]
    write("random_zoom_factor.json", m)

    # Not an error: op_layers.test imports Keras 3 operation layers with a
    # number on either side and of two tensors.
    keras.backend.clear_session()
    x = keras.Input((4,))
    y = 3.0 - x
    y = y / 2.0
    y = y - 1.0
    y = y + x
    write("op_layers.json", json.loads(keras.Model(x, y * x).to_json()))

    # Broadcasting, noise shapes, Normalization and operation layers.
    # Two statistics for three channels (Keras refuses it when called).
    m = one_layer((4, 4, 3), lambda x: L.Normalization(
        mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0])(x))
    layer(m, "Normalization")["mean"] = [1.0, 2.0]
    layer(m, "Normalization")["variance"] = [1.0, 4.0]
    write("normalization_vector.json", m)

    m = one_layer((4, 4, 3), L.Normalization(axis=1))
    write("normalization_axis.json", m)

    m = one_layer((4, 4, 3), lambda x: keras.ops.power(x, 2.0))
    write("op_layer_power.json", m)

    keras.backend.clear_session()
    a, b = keras.Input((4,)), keras.Input((4,))
    m = json.loads(keras.Model([a, b], a / b).to_json())
    write("op_layer_divide_tensors.json", m)

    # Keras refuses a rank-3 input when the model is built.
    m = one_layer((4, 4, 3), L.SpatialDropout2D(0.5))
    m["config"]["layers"][0]["config"]["batch_shape"] = [None, 4, 3]
    write("spatial_dropout_rank.json", m)

    keras.backend.clear_session()
    a, b = keras.Input((4, 3)), keras.Input((1, 3))
    m = json.loads(keras.Model([a, b], L.Add()([a, b])).to_json())
    m["config"]["layers"][1]["config"]["batch_shape"] = [None, 2, 3]
    write("add_broadcast_mismatch.json", m)

    with open(os.path.join(HERE, "..", "fixtures", "tf2",
                           "fashion_mnist_cnn.json")) as f:
        m = json.load(f)
    layer(m, "Conv2D")["activation"] = "hard_sigmoid"
    write("tf2_hard_sigmoid.json", m)


if __name__ == "__main__":
    main()
