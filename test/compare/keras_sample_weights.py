"""Fixtures for keras-sample-weights.test: Keras' sample_weight,
class_weight and the short last batch of every epoch.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python test/compare/keras_sample_weights.py \
      test/compare/Inputs/sample_weights [CASE ...]

One small MLP (Input((5,)) -> Dense(7, tanh) -> Dense(K, activation)) per
case, trained with model.fit for 2 epochs on 20 examples at batch 8
(shuffle off): each epoch is 3 steps, the last of 4 examples, as Keras
ends an epoch. Each case weighs the examples: a sample_weight array, or a
class_weight dict (the test passes the same as --class-weight), or nothing
(the short batch alone); some validate on weighted data every epoch.
Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/data.npz              x, y (and sample_weight) of the 20 examples
  CASE/val.npz               validation x, y, sample_weight (when used)
  CASE/init.safetensors      every variable before fit
  CASE/expected.safetensors  every variable after it
  CASE/history.json          fit's epoch logs (loss, metrics, val_*)
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from keras_pointwise_losses import build  # noqa: E402  (the same MLP)
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, BATCH, EPOCHS = 20, 8, 2
CLASS_WEIGHT = {0: 1.0, 1: 3.0, 2: 0.5}  # class 3: 1, as Keras' default


def cases(keras):
    """name -> (loss, units, activation, targets, metrics, weighting,
    validation)."""
    L, M = keras.losses, keras.metrics
    return {
        "short_batch": (L.SparseCategoricalCrossentropy(), 4, "softmax",
                        "classes", ["accuracy"], None, False),
        "sparse_sample_weight": (L.SparseCategoricalCrossentropy(), 4,
                                 "softmax", "classes", ["accuracy"],
                                 "sample", True),
        "sparse_class_weight": (L.SparseCategoricalCrossentropy(), 4,
                                "softmax", "classes", ["accuracy"], "class",
                                False),
        "categorical_class_weight": (L.CategoricalCrossentropy(), 4, "softmax",
                                     "onehot", ["accuracy"], "class", False),
        "bce_logits_sample_weight": (
            L.BinaryCrossentropy(from_logits=True), 1, None, "binary", [],
            "sample", True),
        "mse_sample_weight": ("mse", 3, None, "real", ["mae"], "sample", True),
        "dice_sample_weight": (L.Dice(), 3, "sigmoid", "binary3", [],
                               "sample", False),
        # reduction="sum": the short batch sums its 4 examples as it is.
        "mse_sum_sample_weight": (L.MeanSquaredError(reduction="sum"), 2,
                                  None, "real", [], "sample", False),
        # reduction="sum" without weights: Dice's one ratio over the short
        # batch's 4 examples, not scaled by them.
        "dice_sum_short_batch": (L.Dice(reduction="sum"), 3, "sigmoid",
                                 "binary3", [], None, False),
        # reduction="sum" in validation: each validation batch's summed
        # loss weighs as many as its examples (10 = 8 + 2).
        "mse_sum_validation": (L.MeanSquaredError(reduction="sum"), 2, None,
                               "real", ["mae"], None, True),
        # The confusion metrics over an epoch that ends with a short batch:
        # each of its examples counted once.
        "confusion_short_batch": (
            L.BinaryCrossentropy(), 1, "sigmoid", "binary",
            [M.Precision(), M.Recall(), M.AUC(), M.AUC(curve="PR",
                                                      name="pr_auc")],
            None, True),
        # The top-k accuracies (unweighted, as Keras' compiled metrics are).
        "sparse_top_k": (L.SparseCategoricalCrossentropy(), 6, "softmax",
                         "classes",
                         [M.SparseTopKCategoricalAccuracy(k=2, name="top2"),
                          "sparse_top_k_categorical_accuracy"], "sample",
                         True),
        "categorical_top_k": (L.CategoricalCrossentropy(), 6, "softmax",
                              "onehot",
                              [M.TopKCategoricalAccuracy(k=3),
                               "accuracy"], None, False),
    }


def targets(kind, rng, n, units):
    if kind == "classes":
        return rng.integers(0, units, n).astype(np.int32)
    if kind == "onehot":
        return np.eye(units, dtype=np.float32)[rng.integers(0, units, n)]
    if kind in ("binary", "binary3"):
        return rng.integers(0, 2, (n, units)).astype(np.float32)
    return rng.normal(0.5, 1.0, (n, units)).astype(np.float32)


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    for name, (loss, units, activation, kind, metrics, weighting,
               validate) in cases(keras).items():
        if only and name not in only:
            continue
        rng = np.random.default_rng(sum(map(ord, name)))
        x = rng.normal(0.0, 1.0, (EXAMPLES, 5)).astype(np.float32)
        y = targets(kind, rng, EXAMPLES, units)
        w = rng.uniform(0.2, 2.0, EXAMPLES).astype(np.float32)
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        arrays = {"x": x, "y": y}
        if weighting == "sample":
            arrays["sample_weight"] = w
        np.savez(os.path.join(out, "data.npz"), **arrays)
        fit = {}
        if validate:
            xv = rng.normal(0.0, 1.0, (10, 5)).astype(np.float32)
            yv = targets(kind, rng, 10, units)
            wv = rng.uniform(0.2, 2.0, 10).astype(np.float32)
            np.savez(os.path.join(out, "val.npz"), x=xv, y=yv,
                     sample_weight=wv)
            fit["validation_data"] = (xv, yv, wv)
        model = build(keras, units, activation)
        model.compile(optimizer=keras.optimizers.SGD(
                          learning_rate=0.5 if name.startswith("dice") else
                          0.1, momentum=0.5),
                      loss=loss, metrics=metrics)
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(json.loads(model.to_json()), f)
        write_safetensors(os.path.join(out, "init.safetensors"),
                          variables(model))
        history = model.fit(
            x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
            sample_weight=w if weighting == "sample" else None,
            class_weight=CLASS_WEIGHT if weighting == "class" else None,
            **fit)
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})


if __name__ == "__main__":
    main()
