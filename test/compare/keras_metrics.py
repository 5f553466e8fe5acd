"""Fixtures for Keras 3's stateful compile metrics: AUC (ROC and PR,
interpolation and the minoring/majoring Riemann sums, from_logits, fewer
thresholds, multi-class flattened), Precision and Recall (thresholds,
top_k, class_id) and RootMeanSquaredError, logged by model.fit (each epoch,
on training and validation data) and model.evaluate.

Regenerate (TensorFlow 2.21, Keras 3; the tests themselves need neither):

  /work/venvs/keras-tf/bin/python test/compare/keras_metrics.py \
      test/compare/Inputs/metrics [CASE ...]

One small MLP (Input((5,)) -> Dense(7, tanh) -> Dense(K, activation)) per
case, trained with model.fit for 2 epochs on 24 examples at batch 8
(shuffle off, SGD(0.1, momentum 0.5)), then evaluated on 8 test examples
in one batch. The metrics are compile metrics (unweighted: the
sample_weight of some cases weighs the loss alone). Every set is a whole
number of batches. Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/data.npz              x, y (and sample_weight) of the 24 examples
  CASE/val.npz               validation x, y (and sample_weight), one batch
  CASE/test.npz              test x, y (and sample_weight), one batch
  CASE/init.safetensors      every variable before fit
  CASE/expected.safetensors  every variable after it
  CASE/history.json          fit's epoch logs (loss, metrics, val_*)
  CASE/evaluate.json         model.evaluate of the test set after fit
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from keras_pointwise_losses import build  # noqa: E402  (the same MLP)
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, BATCH, EPOCHS, HELD_OUT = 24, 8, 2, 8


def cases(keras):
    """name -> a function of no arguments that makes (loss, units,
    activation, targets, metrics, weighted, validation): the metrics are
    made after keras.backend.clear_session(), so that every case's unnamed
    AUC() is "auc" (Keras numbers a second one in a session "auc_1")."""
    L, M = keras.losses, keras.metrics
    return {
        "auc_binary": lambda: (
            L.BinaryCrossentropy(), 1, "sigmoid", "binary",
            [M.AUC(), M.AUC(curve="PR", name="pr_auc"), M.Precision(),
             M.Recall()], True, True),
        # Precision and Recall have no from_logits: they compare the logits
        # to their thresholds as they are.
        "auc_logits": lambda: (
            L.BinaryCrossentropy(from_logits=True), 1, None, "binary",
            [M.AUC(from_logits=True),
             M.AUC(num_thresholds=50, summation_method="minoring",
                   name="auc_min"),
             M.AUC(summation_method="majoring", name="auc_maj"),
             M.Precision(thresholds=0.3, name="p03"),
             M.Recall(thresholds=0.7, name="r07")], False, False),
        # AUC of K columns without multi_label flattens them into one curve.
        "auc_multiclass": lambda: (
            L.CategoricalCrossentropy(), 4, "softmax", "onehot",
            [M.AUC(), M.Precision(top_k=2, name="p_top2"),
             M.Recall(class_id=1, name="r_c1"), "accuracy"], False, False),
        "rmse": lambda: (
            "mse", 3, None, "real",
            [M.RootMeanSquaredError(), "mae", "mse"], True, True),
    }


def targets(kind, rng, n, units):
    if kind == "onehot":
        return np.eye(units, dtype=np.float32)[rng.integers(0, units, n)]
    if kind == "binary":
        return rng.integers(0, 2, (n, units)).astype(np.float32)
    return rng.normal(0.5, 1.0, (n, units)).astype(np.float32)


def examples(kind, rng, n, units):
    return {"x": rng.normal(0.0, 1.0, (n, 5)).astype(np.float32),
            "y": targets(kind, rng, n, units),
            "sample_weight": rng.uniform(0.2, 2.0, n).astype(np.float32)}


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    for name, case in cases(keras).items():
        if only and name not in only:
            continue
        keras.backend.clear_session()
        (loss, units, activation, kind, metrics, weighted,
         validate) = case()
        rng = np.random.default_rng(sum(map(ord, name)))
        keras.utils.set_random_seed(sum(map(ord, name)))
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        keep = ("x", "y", "sample_weight") if weighted else ("x", "y")
        train = examples(kind, rng, EXAMPLES, units)
        val = examples(kind, rng, HELD_OUT, units)
        test = examples(kind, rng, HELD_OUT, units)
        train, val, test = ({k: a[k] for k in keep}
                            for a in (train, val, test))
        np.savez(os.path.join(out, "data.npz"), **train)
        np.savez(os.path.join(out, "test.npz"), **test)
        fit = {}
        if validate:
            np.savez(os.path.join(out, "val.npz"), **val)
            fit["validation_data"] = tuple(val[k] for k in keep)
        model = build(keras, units, activation)
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1,
                                                     momentum=0.5),
                      loss=loss, metrics=metrics)
        config = json.loads(model.to_json())
        assert "compile_config" in config, name
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(config, f)
        write_safetensors(os.path.join(out, "init.safetensors"),
                          variables(model))
        history = model.fit(
            train["x"], train["y"], batch_size=BATCH, epochs=EPOCHS,
            shuffle=False, verbose=0,
            sample_weight=train.get("sample_weight"), **fit)
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        result = model.evaluate(
            test["x"], test["y"], sample_weight=test.get("sample_weight"),
            batch_size=HELD_OUT, return_dict=True, verbose=0)
        with open(os.path.join(out, "evaluate.json"), "w") as f:
            json.dump({k: float(v) for k, v in result.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})
        print(name, "evaluate", {k: "%.6f" % v for k, v in result.items()})


if __name__ == "__main__":
    main()
