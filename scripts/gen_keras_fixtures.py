#!/usr/bin/env python3
"""Generate Keras model JSON fixtures with real Keras.

Normally run through scripts/gen-keras-fixtures.sh, which creates the
virtual environments with the pinned versions below.

Versions these fixtures were generated with (Python 3.11.7):
  --flavor keras3 : keras==3.15.1, jax[cpu]==0.10.2 (jaxlib==0.10.2),
                    numpy==2.4.6, KERAS_BACKEND=jax
  --flavor tf2    : tensorflow-cpu==2.15.1 (bundled keras==2.15.0,
                    i.e. tf.keras / Keras 2), numpy==1.26.4

Outputs (paths relative to the repository root):
  keras3:
    examples/fashion_mnist_cnn.json
    examples/mgpu_mlp.json
    examples/regression_mlp.json, examples/binary_mlp.json (written with
      the tensorflow backend, keras==3.15.1, tensorflow-cpu==2.21.0)
    examples/multiworker_cnn.json
    examples/vgg16_oct.json
    examples/residual_concat.json
    test/frontends/keras/fixtures/nested_{vgg16,sequential,functional}.json
    test/frontends/keras/Inputs/nested_shared.json
    test/frontends/keras/Inputs/pad_crop.json
    test/frontends/keras/Inputs/activations_merges.json
    test/frontends/keras/Inputs/pool_upsample.json
    test/frontends/keras/Inputs/permute.json
    test/frontends/keras/Inputs/global_avg_keepdims.json
    test/frontends/keras/Inputs/augmentation.json
    test/frontends/keras/fixtures/fashion_mnist_cnn.keras
    test/frontends/keras/fixtures/residual_concat.keras
  tf2:
    test/frontends/keras/fixtures/tf2/fashion_mnist_cnn.json
    test/frontends/keras/fixtures/tf2/multiworker_cnn.json
    test/frontends/keras/fixtures/tf2/residual_concat.json

Every model is built after clearing the Keras session and re-seeding, so the
layer names are Keras' default auto names (conv2d, conv2d_1, dense, ...)
starting fresh for each model. JSON is written with indent=2, keys in the
order Keras emits them, and a trailing newline. Existing outputs are
overwritten.

Usage:
  gen_keras_fixtures.py --flavor {keras3,tf2} [--repo-root DIR]
                        [--examples-dir DIR] [--fixtures-dir DIR]
"""

import argparse
import json
import os
import sys
from pathlib import Path

SEED = 1234


def parse_args():
    default_root = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flavor", choices=["keras3", "tf2"], required=True)
    p.add_argument("--repo-root", type=Path, default=default_root)
    p.add_argument("--examples-dir", type=Path, default=None,
                   help="default: <repo-root>/examples")
    p.add_argument("--fixtures-dir", type=Path, default=None,
                   help="default: <repo-root>/test/frontends/keras/fixtures")
    p.add_argument("--only", nargs="*", default=None,
                   help="generate only these models (by name)")
    args = p.parse_args()
    root = args.repo_root.resolve()
    if args.examples_dir is None:
        args.examples_dir = root / "examples"
    if args.fixtures_dir is None:
        args.fixtures_dir = root / "test" / "frontends" / "keras" / "fixtures"
    return args


def write_json(path, json_text):
    """Pretty-print the string returned by model.to_json() to `path`."""
    data = json.loads(json_text)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    print(f"wrote {path}")


def save_archive(model, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    model.save(str(path))
    print(f"wrote {path}")


# --------------------------------------------------------------------------
# Model definitions. `keras` is either Keras 3 (`import keras`) or the
# Keras 2 bundled with TensorFlow 2.15 (`tf.keras`); `flavor` selects the
# few spots where the two differ.
# --------------------------------------------------------------------------

def fashion_mnist_cnn(keras, flavor):
    L = keras.layers
    inputs = keras.Input(shape=(28, 28, 1))
    x = L.Conv2D(32, (3, 3), activation="relu")(inputs)
    x = L.MaxPooling2D(pool_size=(2, 2), strides=2)(x)
    x = L.Conv2D(64, (3, 3), activation="relu")(x)
    x = L.MaxPooling2D(pool_size=(2, 2), strides=2)(x)
    x = L.Conv2D(64, (3, 3), activation="relu")(x)
    x = L.Flatten()(x)
    x = L.Dense(64, activation="relu")(x)
    outputs = L.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.Adam(learning_rate=0.001),
                  metrics=["accuracy"])
    return model


def mgpu_mlp(keras, flavor):
    # Keras multi-GPU distributed training guide.
    L = keras.layers
    inputs = keras.Input(shape=(784,))
    x = L.Dense(256, activation="relu")(inputs)
    x = L.Dense(256, activation="relu")(x)
    outputs = L.Dense(10)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()])
    return model


def regression_mlp(keras, flavor):
    # Regression on 8 features (a known function of them in the tests):
    # mean squared error, mean absolute error as the metric.
    L = keras.layers
    inputs = keras.Input(shape=(8,))
    x = L.Dense(64, activation="relu")(inputs)
    x = L.Dense(64, activation="relu")(x)
    outputs = L.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.003),
                  loss="mse", metrics=["mae"])
    return model


def binary_mlp(keras, flavor):
    # Binary classification, Keras' transfer-learning guide's head: one
    # logit, BinaryCrossentropy(from_logits=True), accuracy (which Keras
    # resolves to binary accuracy for one output unit).
    L = keras.layers
    inputs = keras.Input(shape=(784,))
    x = L.Dense(128, activation="relu")(inputs)
    outputs = L.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def multiworker_cnn(keras, flavor):
    L = keras.layers
    if flavor == "keras3":
        # Keras 3 prefers an explicit Input in Sequential models (the
        # `input_shape=` layer kwarg still works there but warns).
        first = [keras.Input(shape=(28, 28, 1)),
                 L.Conv2D(32, 3, activation="relu")]
    else:
        first = [L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1))]
    model = keras.Sequential(first + [
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dense(64, activation="relu"),
        L.Dense(10),
    ])
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.SGD(learning_rate=1e-4),
        metrics=["accuracy"])
    return model


def vgg16_oct(keras, flavor):
    # weights=None: no network access to download ImageNet weights.
    vgg = keras.applications.VGG16(input_shape=(224, 224, 3),
                                   include_top=False, weights=None)
    x = keras.layers.Flatten()(vgg.output)
    outputs = keras.layers.Dense(4, activation="softmax")(x)
    model = keras.Model(inputs=vgg.input, outputs=outputs)
    for layer in vgg.layers[:-4]:
        layer.trainable = False
    model.compile(optimizer=keras.optimizers.Adam(),
                  loss="categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def nested_vgg16(keras, flavor):
    # Transfer learning: a frozen VGG16 base used as the first layer of a
    # Sequential (the base is a Functional model nested as a layer).
    base = keras.applications.VGG16(include_top=False, weights=None,
                                    input_shape=(32, 32, 3))
    base.trainable = False
    model = keras.Sequential([
        base,
        keras.layers.Flatten(),
        keras.layers.Dense(4, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(),
                  loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def nested_sequential(keras, flavor):
    # A Sequential called inside a Functional model.
    L = keras.layers
    inner = keras.Sequential([keras.Input(shape=(8,)),
                              L.Dense(16, activation="relu"),
                              L.Dense(8)], name="mlp")
    inputs = keras.Input(shape=(8,))
    x = inner(inputs)
    outputs = L.Dense(3, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def nested_functional(keras, flavor):
    # Functional in Functional in Functional: the innermost model is frozen,
    # which freezes its BatchNormalization too.
    L = keras.layers
    block_in = keras.Input(shape=(16, 16, 3))
    y = L.Conv2D(8, 3, padding="same", name="block_conv")(block_in)
    y = L.BatchNormalization(name="block_bn")(y)
    y = L.Activation("relu", name="block_relu")(y)
    block = keras.Model(block_in, y, name="block")
    block.trainable = False
    backbone_in = keras.Input(shape=(16, 16, 3))
    z = block(backbone_in)
    z = L.Conv2D(4, 1, name="head_conv")(z)
    z = L.GlobalAveragePooling2D(name="pool")(z)
    backbone = keras.Model(backbone_in, z, name="backbone")
    inputs = keras.Input(shape=(16, 16, 3))
    outputs = L.Dense(5, activation="softmax", name="classifier")(
        backbone(inputs))
    model = keras.Model(inputs, outputs, name="outer")
    model.compile(optimizer="adam", loss="categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def nested_shared(keras, flavor):
    # One nested model called on two inputs: the calls share its weights.
    L = keras.layers
    inner = keras.Sequential([keras.Input(shape=(4,)), L.Dense(4)],
                             name="shared")
    a = keras.Input(shape=(4,))
    b = keras.Input(shape=(4,))
    outputs = L.Add()([inner(a), inner(b)])
    return keras.Model([a, b], outputs)


def pad_crop(keras, flavor):
    # ZeroPadding2D and Cropping2D in each config form: int, pair, pair of
    # pairs, and ZeroPadding2D's default; after a convolution, so that they
    # are differentiated.
    L = keras.layers
    inputs = keras.Input(shape=(7, 9, 3))
    x = L.Conv2D(3, 1)(inputs)
    x = L.ZeroPadding2D()(x)
    x = L.ZeroPadding2D(2)(x)
    x = L.ZeroPadding2D((1, 2))(x)
    x = L.ZeroPadding2D(((1, 0), (2, 3)))(x)
    x = L.Cropping2D(1)(x)
    x = L.Cropping2D((2, 1))(x)
    x = L.Cropping2D(((2, 1), (0, 3)))(x)
    x = L.Conv2D(2, 3)(x)
    x = L.Flatten()(x)
    outputs = L.Dense(3, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def activations_merges(keras, flavor):
    # The ReLU layer's settings, the MobileNet activations, Rescaling and
    # the merge layers besides Add and Concatenate.
    L = keras.layers
    inputs = keras.Input(shape=(6,))
    x = L.Rescaling(1.0 / 255, offset=-0.5)(inputs)
    x = L.Dense(8)(x)
    a = L.ReLU(max_value=6.0)(x)
    b = L.ReLU(max_value=3.0, negative_slope=0.1, threshold=0.5)(x)
    c = L.ReLU(negative_slope=0.2)(x)
    d = L.Activation("relu6")(x)
    e = L.Activation("swish")(x)
    f = L.Activation("silu")(x)
    g = L.Activation("hard_sigmoid")(x)
    h = L.Activation("hard_silu")(x)
    i = L.Activation("hard_swish")(x)
    m = L.Multiply()([a, b, c])
    s = L.Subtract()([d, e])
    v = L.Average()([f, g, h])
    y = L.Maximum()([m, s, v, i])
    outputs = L.Dense(3, activation="softmax")(y)
    return keras.Model(inputs, outputs)


def pool_upsample(keras, flavor):
    # GlobalMaxPooling2D with and without keepdims, UpSampling2D by an int
    # and by a pair.
    L = keras.layers
    inputs = keras.Input(shape=(6, 5, 3))
    x = L.Conv2D(4, 1)(inputs)
    u = L.UpSampling2D()(x)
    u2 = L.UpSampling2D((2, 3))(u)
    g1 = L.GlobalMaxPooling2D(keepdims=True)(u2)
    f = L.Flatten()(g1)
    g2 = L.GlobalMaxPooling2D()(u)
    y = L.Add()([f, g2])
    outputs = L.Dense(3, activation="softmax")(y)
    return keras.Model(inputs, outputs)


def global_avg_keepdims(keras, flavor):
    # MobileNet's classifier: GlobalAveragePooling2D(keepdims=True), a 1x1
    # convolution as the dense layer, Reshape to [classes], softmax.
    L = keras.layers
    inputs = keras.Input(shape=(6, 5, 3))
    x = L.Conv2D(4, 3, activation="relu")(inputs)
    x = L.GlobalAveragePooling2D(keepdims=True)(x)
    x = L.Conv2D(3, 1)(x)
    x = L.Reshape((3,))(x)
    outputs = L.Activation("softmax")(x)
    return keras.Model(inputs, outputs)


def permute(keras, flavor):
    # Permute of an image (H and W swapped, then channels first) and of a
    # sequence.
    L = keras.layers
    inputs = keras.Input(shape=(4, 5, 3))
    x = L.Conv2D(2, 1)(inputs)
    x = L.Permute((2, 1, 3))(x)
    x = L.Permute((3, 1, 2))(x)
    x = L.Reshape((10, 4))(x)
    x = L.Permute((2, 1))(x)
    x = L.Flatten()(x)
    outputs = L.Dense(3, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def augmentation(keras, flavor):
    # Keras' random image layers, at the input (no gradient needed) and
    # after a trained convolution (their gradients are), every fill mode.
    L = keras.layers
    inputs = keras.Input(shape=(12, 10, 3))
    x = L.RandomFlip("horizontal", seed=3)(inputs)
    x = L.RandomRotation(0.1, fill_mode="constant", fill_value=0.5)(x)
    x = L.Conv2D(4, 3, padding="same", activation="relu")(x)
    x = L.RandomZoom((-0.2, 0.3), 0.1, fill_mode="wrap")(x)
    x = L.RandomTranslation(0.1, (-0.2, 0.1), fill_mode="nearest",
                            interpolation="nearest")(x)
    x = L.RandomContrast(0.2, value_range=(0, 1))(x)
    x = L.RandomCrop(8, 6, seed=5)(x)
    x = L.RandomFlip(seed=4)(x)
    x = L.Flatten()(x)
    outputs = L.Dense(3, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def layer_shapes(model):
    """Each layer's output shape, as Keras computes it."""
    return {layer.name: list(layer.output.shape) for layer in model.layers}


def summary_counts(model):
    """The parameter counts model.summary() prints."""
    import numpy as np

    def count(weights):
        return int(sum(int(np.prod(w.shape)) for w in weights))
    return {"trainable": count(model.trainable_weights),
            "non_trainable": count(model.non_trainable_weights),
            "output_shape": list(model.output_shape)}


def residual_concat(keras, flavor):
    L = keras.layers
    inputs = keras.Input(shape=(32, 32, 3))
    x = L.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    b1 = L.Conv2D(16, 3, padding="same")(x)
    b2 = L.Conv2D(16, 1)(x)
    added = L.Add()([b1, b2])
    y = L.Concatenate()([added, x])
    y = L.BatchNormalization()(y)
    y = L.Activation("relu")(y)
    y = L.GlobalAveragePooling2D()(y)
    y = L.Dropout(0.5)(y)
    outputs = L.Dense(10, activation="softmax")(y)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9,
                                       nesterov=True),
        loss="categorical_crossentropy",
        metrics=["accuracy"])
    return model


# --------------------------------------------------------------------------

def run_keras3(args):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras  # noqa: E402

    def fresh():
        keras.backend.clear_session()
        keras.utils.set_random_seed(SEED)

    fresh()
    assert keras.backend.image_data_format() == "channels_last", \
        "unexpected image_data_format; set KERAS_HOME to a clean directory"
    assert keras.backend.floatx() == "float32"
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}")

    ex, fx = args.examples_dir, args.fixtures_dir
    builders = [
        ("fashion_mnist_cnn", fashion_mnist_cnn, True),
        ("mgpu_mlp", mgpu_mlp, False),
        ("regression_mlp", regression_mlp, False),
        ("binary_mlp", binary_mlp, False),
        ("multiworker_cnn", multiworker_cnn, False),
        ("vgg16_oct", vgg16_oct, False),
        ("residual_concat", residual_concat, True),
    ]
    for name, build, archive in builders:
        if args.only and name not in args.only:
            continue
        fresh()
        model = build(keras, "keras3")
        write_json(ex / f"{name}.json", model.to_json())
        if archive:
            save_archive(model, fx / f"{name}.keras")

    # Models used as layers; the counts and output shapes Keras computes are
    # what test/frontends/keras/nested_*.test check against.
    nested = [
        ("nested_vgg16", nested_vgg16, fx),
        ("nested_sequential", nested_sequential, fx),
        ("nested_functional", nested_functional, fx),
        ("nested_shared", nested_shared, fx.parent / "Inputs"),
    ]
    for name, build, out in nested:
        if args.only and name not in args.only:
            continue
        fresh()
        model = build(keras, "keras3")
        write_json(out / f"{name}.json", model.to_json())
        print(f"  {name}: {summary_counts(model)}")

    # New layers: the output shapes Keras computes are what the
    # test/frontends/keras/<name>.test checks against.
    layers = [
        ("pad_crop", pad_crop),
        ("activations_merges", activations_merges),
        ("pool_upsample", pool_upsample),
        ("permute", permute),
        ("global_avg_keepdims", global_avg_keepdims),
        ("augmentation", augmentation),
    ]
    for name, build in layers:
        if args.only and name not in args.only:
            continue
        fresh()
        model = build(keras, "keras3")
        write_json(fx.parent / "Inputs" / f"{name}.json", model.to_json())
        print(f"  {name}: {layer_shapes(model)}")


def run_tf2(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # noqa: E402
    import keras as keras_pkg  # the keras 2.x package tf.keras points to
    keras = tf.keras
    if not keras_pkg.__version__.startswith("2."):
        sys.exit(f"tf.keras is {keras_pkg.__version__}, expected Keras 2.x")

    def fresh():
        keras.backend.clear_session()
        keras.utils.set_random_seed(SEED)

    fresh()
    assert keras.backend.image_data_format() == "channels_last", \
        "unexpected image_data_format; set KERAS_HOME to a clean directory"
    assert keras.backend.floatx() == "float32"
    print(f"tensorflow {tf.__version__}, tf.keras {keras_pkg.__version__}")

    out = args.fixtures_dir / "tf2"
    builders = [
        ("fashion_mnist_cnn", fashion_mnist_cnn),
        ("multiworker_cnn", multiworker_cnn),
        ("residual_concat", residual_concat),
    ]
    for name, build in builders:
        fresh()
        model = build(keras, "tf2")
        write_json(out / f"{name}.json", model.to_json())


def main():
    args = parse_args()
    if args.flavor == "keras3":
        run_keras3(args)
    else:
        run_tf2(args)


if __name__ == "__main__":
    main()
