"""Fixtures for Keras 3's SparseCategoricalCrossentropy(ignore_class=...):
the labels equal to ignore_class (-1, outside the classes, or 2, a real
class) add nothing to the loss, and the mean of reduction
"sum_over_batch_size" divides by the labels kept in the batch (Keras masks
the per-example loss and weighs the rest total / kept); reduction="sum"
sums the kept ones. A sample_weight multiplies in. SparseCategoricalAccuracy
knows no ignore_class: an ignored -1 label counts as a wrong prediction.

Regenerate (TensorFlow 2.21, Keras 3; the tests themselves need neither):

  /work/venvs/keras-tf/bin/python test/compare/keras_ignore_class.py \
      test/compare/Inputs/ignore_class [CASE ...]

One small MLP (Input((5,)) -> Dense(7, tanh) -> Dense(5, softmax or
logits)) per case, trained with model.fit for 2 epochs on 24 examples at
batch 8 (shuffle off, SGD(0.1, momentum 0.5)), then evaluated on 8 test
examples in one batch. About 30% of the -1 cases' labels (of the training,
validation and test sets) are -1. Every set is a whole number of batches.
Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/data.npz              x, y int32 (and sample_weight) of 24 examples
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
CLASSES = 5


def cases(keras):
    """name -> a function of no arguments (called after
    keras.backend.clear_session(), so that Keras' default names do not
    count up from case to case) that makes (loss, activation, ignored
    label share, metrics, weighted, validation)."""
    L = keras.losses
    return {
        # SparseCategoricalAccuracy compares argmax to -1: never equal.
        "ignore_minus_one": lambda: (
            L.SparseCategoricalCrossentropy(ignore_class=-1), "softmax",
            0.3, ["accuracy"], False, True),
        # Class 2 is a real class: its examples are left out of the loss.
        "ignore_in_range": lambda: (
            L.SparseCategoricalCrossentropy(ignore_class=2,
                                            from_logits=True), None,
            0.0, [], True, True),
        "ignore_sum": lambda: (
            L.SparseCategoricalCrossentropy(ignore_class=-1,
                                            reduction="sum"), "softmax",
            0.3, [], False, False),
    }


def examples(ignored, rng, n):
    y = rng.integers(0, CLASSES, n).astype(np.int32)
    y[rng.uniform(0.0, 1.0, n) < ignored] = -1
    return {"x": rng.normal(0.0, 1.0, (n, 5)).astype(np.float32), "y": y,
            "sample_weight": rng.uniform(0.2, 2.0, n).astype(np.float32)}


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    for name, case in cases(keras).items():
        if only and name not in only:
            continue
        keras.backend.clear_session()
        loss, activation, ignored, metrics, weighted, validate = case()
        rng = np.random.default_rng(sum(map(ord, name)))
        keras.utils.set_random_seed(sum(map(ord, name)))
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        keep = ("x", "y", "sample_weight") if weighted else ("x", "y")
        train = examples(ignored, rng, EXAMPLES)
        val = examples(ignored, rng, HELD_OUT)
        test = examples(ignored, rng, HELD_OUT)
        train, val, test = ({k: a[k] for k in keep}
                            for a in (train, val, test))
        np.savez(os.path.join(out, "data.npz"), **train)
        np.savez(os.path.join(out, "test.npz"), **test)
        fit = {}
        if validate:
            np.savez(os.path.join(out, "val.npz"), **val)
            fit["validation_data"] = tuple(val[k] for k in keep)
        model = build(keras, CLASSES, activation)
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
