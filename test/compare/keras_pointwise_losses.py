"""Fixtures for keras-pointwise-losses.test (Keras 3's element-wise losses)
and keras-row-losses.test (its focal, row and batch losses).

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python \
      test/compare/keras_pointwise_losses.py \
      test/compare/Inputs/pointwise_losses [CASE ...]

One small MLP (Input((5,)) -> Dense(7, tanh) -> Dense(K, activation)) per
loss, trained for 3 model.fit steps (SGD with momentum) on one fixed batch
of 8 (the same batch every step, shuffle off), with the targets each loss
takes: real values for the regression losses, positive counts for
Poisson, 0/1 for binary cross-entropy and the hinges, probability rows for
the KL divergence, one-hot rows for the categorical focal cross-entropy
and the categorical hinge. Some cases add the loss's options (label smoothing,
from_logits, Huber's delta, reduction="sum") or a metric. Keras 3 does not
serialize Huber's delta (Huber.get_config drops it); huber_delta's
model.json carries it as tf.keras 2 writes it. Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/batch.npz             x (8, 5) float32 and y (8, K) float32
  CASE/init.safetensors      every variable before the steps, Keras' names
  CASE/expected.safetensors  every variable after 3 steps
  CASE/history.json          fit's loss and metrics of each step
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

STEPS = 3


def cases(keras):
    """name -> (loss, output units, output activation, targets, metrics)."""
    L = keras.losses
    return {
        "mse": ("mse", 3, None, "real", ["mae"]),
        "mae": (L.MeanAbsoluteError(), 3, None, "real", []),
        "mape": (L.MeanAbsolutePercentageError(), 2, None, "real", []),
        "msle": (L.MeanSquaredLogarithmicError(), 2, "sigmoid", "positive",
                 ["mse"]),
        "huber": (L.Huber(), 3, None, "real", []),
        "huber_delta": (L.Huber(delta=0.3), 3, None, "real", []),
        "log_cosh": (L.LogCosh(), 3, None, "real", []),
        "poisson": (L.Poisson(), 2, "sigmoid", "counts", []),
        "kl_divergence": (L.KLDivergence(), 4, "softmax", "distribution", []),
        "bce": (L.BinaryCrossentropy(), 1, "sigmoid", "binary", ["accuracy"]),
        "bce_logits_smoothing": (
            L.BinaryCrossentropy(from_logits=True, label_smoothing=0.2), 3,
            None, "binary", []),
        "hinge": (L.Hinge(), 2, "tanh", "binary", []),
        "squared_hinge": (L.SquaredHinge(), 2, "tanh", "signs", []),
        "mse_sum": (L.MeanSquaredError(reduction="sum"), 2, None, "real", []),
        # keras-row-losses.test: the focal cross-entropies, and the losses
        # of a whole row (cosine similarity, categorical hinge) or of the
        # whole batch (Dice, Tversky: axis=None).
        "binary_focal": (L.BinaryFocalCrossentropy(), 3, "sigmoid",
                         "binary", []),
        "binary_focal_options": (
            L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.4,
                                      gamma=1.5, from_logits=True,
                                      label_smoothing=0.1), 2, None, "binary",
            []),
        "categorical_focal": (L.CategoricalFocalCrossentropy(), 4, "softmax",
                              "onehot", ["accuracy"]),
        "categorical_focal_options": (
            L.CategoricalFocalCrossentropy(alpha=0.6, gamma=3.0,
                                           from_logits=True,
                                           label_smoothing=0.1), 4, None,
            "onehot", []),
        "cosine_similarity": (L.CosineSimilarity(), 3, None, "real", []),
        "cosine_similarity_name": ("cosine_similarity", 3, "tanh", "real",
                                   ["mse"]),
        "categorical_hinge": (L.CategoricalHinge(), 4, None, "onehot", []),
        "dice": (L.Dice(), 3, "sigmoid", "binary", []),
        "tversky": (L.Tversky(alpha=0.3, beta=0.7), 3, "sigmoid", "binary",
                    []),
    }


def targets(kind, rng, units):
    shape = (8, units)
    if kind == "real":
        return rng.normal(0.5, 1.0, shape).astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.0, 3.0, shape).astype(np.float32)
    if kind == "counts":
        return rng.integers(0, 5, shape).astype(np.float32)
    if kind == "binary":
        return rng.integers(0, 2, shape).astype(np.float32)
    if kind == "signs":
        return (2 * rng.integers(0, 2, shape) - 1).astype(np.float32)
    if kind == "onehot":
        return np.eye(units, dtype=np.float32)[rng.integers(0, units, 8)]
    p = rng.uniform(0.1, 1.0, shape)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def build(keras, units, activation):
    keras.utils.set_random_seed(11)
    inputs = keras.Input((5,), name="input_layer")
    h = keras.layers.Dense(7, activation="tanh", name="hidden")(inputs)
    outputs = keras.layers.Dense(units, activation=activation,
                                 name="out")(h)
    return keras.Model(inputs, outputs)


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    # MAPE's gradient is 100 / |t| an element: a smaller step keeps it from
    # diverging in 3 steps. Dice's and Tversky's are small (one ratio over
    # the whole batch): a larger step makes 3 steps move the weights.
    rates = {"mape": 0.001, "dice": 0.5, "tversky": 0.5}
    for name, (loss, units, activation, kind, metrics) in cases(keras).items():
        if only and name not in only:
            continue
        rng = np.random.default_rng(sum(map(ord, name)))
        x = rng.normal(0.0, 1.0, (8, 5)).astype(np.float32)
        y = targets(kind, rng, units)
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "batch.npz"), x=x, y=y)
        model = build(keras, units, activation)
        model.compile(optimizer=keras.optimizers.SGD(
                          learning_rate=rates.get(name, 0.1), momentum=0.5),
                      loss=loss, metrics=metrics)
        config = json.loads(model.to_json())
        if name == "huber_delta":
            # Keras 3's Huber.get_config drops delta (a model it reloads
            # trains with 1.0); tf.keras 2 writes it, as here.
            config["compile_config"]["loss"]["config"]["delta"] = 0.3
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(config, f)
        write_safetensors(os.path.join(out, "init.safetensors"),
                          variables(model))
        history = model.fit(x, y, batch_size=8, epochs=STEPS, shuffle=False,
                            verbose=0)
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})


if __name__ == "__main__":
    main()
