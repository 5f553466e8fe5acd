"""Fixtures for keras-compile-options.test: Keras 3 optimizer options.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python \
      test/compare/keras_compile_options.py test/compare/Inputs/compile_options \
      [CASE ...]

(naming cases regenerates only those, and the batch).

One tiny model (Conv2D(3, 3) -> Flatten -> Dense(3, softmax), sparse
categorical cross-entropy) trained for 3 model.fit steps on one fixed batch
of 8 (the same batch every step, shuffle off) under each optimizer of
CASES, each with the gradient clipping and weight decay that Keras applies
before the update (keras/src/optimizers/base_optimizer.py, apply), or a
learning-rate schedule. The clipping thresholds are below the gradients'
norms and values, so that every step clips. Writes to DIR:

  train-images-idx3-ubyte    the batch: 8 images 6x6x2, uint8 (graphrun
  train-labels-idx1-ubyte    reads them / 255, as the script feeds Keras),
  t10k-*                     labels 0..2; the test split is the same files
  CASE/model.json            model.to_json(), compile config included
  CASE/init.safetensors      every variable before the steps, Keras' names
  CASE/expected.safetensors  every variable after 3 steps
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables, write_batch  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

STEPS = 3


def cases(keras):
    o = keras.optimizers
    s = keras.optimizers.schedules
    return {
        # Per-variable clipping, on SGD with Nesterov momentum (SGD is
        # where the gradient's scale shows: Adam and RMSprop divide most of
        # it out).
        "sgd_clipnorm": o.SGD(learning_rate=0.1, momentum=0.9, nesterov=True,
                              clipnorm=0.2),
        # The global norm clipped, and weight decay, on SGD with momentum.
        "sgd_global_clipnorm": o.SGD(learning_rate=0.1, momentum=0.9,
                                     global_clipnorm=0.3, weight_decay=0.01),
        # AdamW (weight_decay 0.004 by default, here larger), clipnorm.
        "adamw_clipnorm": o.AdamW(learning_rate=0.01, weight_decay=0.05,
                                  clipnorm=0.1),
        # Elementwise clipping on centered RMSprop with momentum.
        "rmsprop_clipvalue": o.RMSprop(learning_rate=0.01, momentum=0.5,
                                       centered=True, clipvalue=0.002,
                                       weight_decay=0.02),
        # Learning-rate schedules, evaluated at Keras' iterations (0, 1, 2
        # over the 3 steps), each chosen to change the rate every step.
        # AdamW with global clipping under CosineDecay with a linear
        # warm-up (2 steps from 0.001 to 0.01, then the cosine decay).
        "adamw_cosine_warmup": o.AdamW(
            learning_rate=s.CosineDecay(0.001, decay_steps=4, alpha=0.1,
                                        warmup_target=0.01, warmup_steps=2),
            global_clipnorm=0.5),
        "sgd_exponential_staircase": o.SGD(
            learning_rate=s.ExponentialDecay(0.1, decay_steps=1,
                                             decay_rate=0.5, staircase=True),
            momentum=0.9, weight_decay=0.01),
        "sgd_piecewise_constant": o.SGD(
            learning_rate=s.PiecewiseConstantDecay([0, 1],
                                                   [0.1, 0.05, 0.01])),
        "rmsprop_inverse_time": o.RMSprop(
            learning_rate=s.InverseTimeDecay(0.01, decay_steps=1,
                                             decay_rate=0.5)),
        "sgd_polynomial": o.SGD(
            learning_rate=s.PolynomialDecay(0.1, decay_steps=2,
                                            end_learning_rate=0.01,
                                            power=2.0)),
        # Adagrad, Adamax and Nadam (keras/src/optimizers/{adagrad,adamax,
        # nadam}.py), each with a non-default hyper-parameter that shows
        # (Adagrad's initial accumulator, epsilon) and one option of the
        # base optimizer; Nadam's momentum-cache product (u_product) changes
        # every step.
        "adagrad_weight_decay": o.Adagrad(learning_rate=0.05,
                                          initial_accumulator_value=0.02,
                                          epsilon=1e-6, weight_decay=0.02),
        "adamax_clipnorm": o.Adamax(learning_rate=0.02, beta_1=0.8,
                                    beta_2=0.99, clipnorm=0.1),
        "nadam_exponential": o.Nadam(
            learning_rate=s.ExponentialDecay(0.02, decay_steps=1,
                                             decay_rate=0.5),
            beta_1=0.85, beta_2=0.99),
        # use_ema: the moving average of the weights, which fit() leaves in
        # the model at the end (finalize_variable_values); with an
        # overwrite every 2nd step, step 3 starts from the average.
        "sgd_ema": o.SGD(learning_rate=0.1, momentum=0.9, use_ema=True,
                         ema_momentum=0.9),
        "adam_ema_overwrite": o.Adam(learning_rate=0.05, use_ema=True,
                                     ema_momentum=0.5,
                                     ema_overwrite_frequency=2),
    }


def loss_cases(keras):
    """Loss options: name -> (optimizer, loss, one-hot labels?). The models
    have 10 classes (Fashion-MNIST's, which graphrun one-hots to), labels
    0..2. Cases with reduction="sum" are also trained under
    MirroredStrategy on 2 logical CPUs (expected_mirrored.safetensors):
    Keras scales only a sum_over_batch_size loss by 1 / replicas
    (keras/src/losses/loss.py, reduce_values) and sums the replicas'
    gradients, so a "sum" step follows the sum over the global batch, as
    on one device."""
    o = keras.optimizers
    losses = keras.losses
    return {
        "cce_label_smoothing": (
            o.SGD(learning_rate=0.5, momentum=0.9),
            losses.CategoricalCrossentropy(label_smoothing=0.2), True),
        "cce_sum_label_smoothing": (
            o.SGD(learning_rate=0.05),
            losses.CategoricalCrossentropy(label_smoothing=0.1,
                                           reduction="sum"), True),
        "scce_sum": (
            o.SGD(learning_rate=0.05, momentum=0.5),
            losses.SparseCategoricalCrossentropy(reduction="sum"), False),
    }


def build(keras, classes=3):
    keras.utils.set_random_seed(7)
    inputs = keras.Input((6, 6, 2), name="input_layer")
    x = keras.layers.Conv2D(3, 3, name="conv2d")(inputs)
    x = keras.layers.Flatten(name="flatten")(x)
    outputs = keras.layers.Dense(classes, activation="softmax",
                                 name="dense")(x)
    return keras.Model(inputs, outputs)


def loss_fixtures(keras, tf, directory, only, x, y):
    for name, (optimizer, loss, one_hot) in loss_cases(keras).items():
        if only and name not in only:
            continue
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        labels = keras.utils.to_categorical(y, 10) if one_hot else y
        model = build(keras, classes=10)
        model.compile(optimizer=optimizer, loss=loss)
        with open(os.path.join(out, "model.json"), "w") as f:
            f.write(model.to_json())
        before = variables(model)
        write_safetensors(os.path.join(out, "init.safetensors"), before)
        model.fit(x, labels, batch_size=8, epochs=STEPS, shuffle=False,
                  verbose=0)
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        print(name, json.loads(model.to_json())["compile_config"]["loss"])
        if loss.reduction != "sum":
            continue
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            mirrored = build(keras, classes=10)
            mirrored.compile(optimizer=optimizer.__class__.from_config(
                                 optimizer.get_config()),
                             loss=loss.__class__.from_config(
                                 loss.get_config()))
        mirrored.set_weights(model.get_weights())
        for layer in mirrored.layers:
            for w in layer.weights:
                w.assign(before[layer.name + "/" + w.name])
        mirrored.fit(x, labels, batch_size=8, epochs=STEPS, shuffle=False,
                     verbose=0)
        after = variables(mirrored)
        write_safetensors(os.path.join(out, "expected_mirrored.safetensors"),
                          after)
        single = variables(model)
        print("  mirrored vs single max difference",
              max(float(np.abs(after[v] - single[v]).max()) for v in after))


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    import tensorflow as tf
    # Two logical CPUs for MirroredStrategy (before TensorFlow starts).
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras

    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(8, 6, 6, 2), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], np.uint8)
    write_batch(directory, images, labels)
    x = images.astype(np.float32) / 255.0
    y = labels.astype(np.int32)

    only = set(sys.argv[2:])
    loss_fixtures(keras, tf, directory, only, x, y)
    for name, optimizer in cases(keras).items():
        if only and name not in only:
            continue
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        model = build(keras)
        model.compile(optimizer=optimizer,
                      loss="sparse_categorical_crossentropy")
        # Gradient norms of the first step, to show that clipping bites.
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                keras.losses.sparse_categorical_crossentropy(y, model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        norms = [float(tf.norm(g)) for g in grads]
        with open(os.path.join(out, "model.json"), "w") as f:
            f.write(model.to_json())
        before = variables(model)
        write_safetensors(os.path.join(out, "init.safetensors"), before)
        model.fit(x, y, batch_size=8, epochs=STEPS, shuffle=False, verbose=0)
        after = variables(model)
        write_safetensors(os.path.join(out, "expected.safetensors"), after)
        print(name, "first-step gradient norms",
              ["%.3g" % n for n in norms],
              "max |g|", "%.3g" % max(float(tf.reduce_max(tf.abs(g)))
                                     for g in grads))
        for v in sorted(after):
            moved = float(np.abs(after[v] - before[v]).max())
            print("  %s: %s, max change %.3g" % (v, after[v].shape, moved))
        config = json.loads(model.to_json())["compile_config"]["optimizer"]
        print("  ", config["class_name"], {k: v for k, v in
                                            config["config"].items()
                                            if v not in (None, False)})
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
