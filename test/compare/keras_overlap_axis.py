"""Fixtures for Keras 3's overlap losses over an axis: Dice and Tversky
with axis set, on an output of shape (4, 3) per example. Keras sums the
overlap terms over `axis` alone, so the loss is a tensor of ratios (one per
example with axis=(1, 2); one per example and row with axis=-1; one per
example and column with axis=1) that the reduction then averages. A
sample_weight (N,) weighs dice_axis_1_2's (N,) ratios; Keras 3.15 cannot
weigh a loss of (N, 4) or (N, 3) by it (it multiplies without expanding
the weights and fails: "Dimensions must be equal"). Keras' Tversky names y_true
"inputs" and y_pred "targets": alpha weighs sum((1 - y_pred) * y_true) and
beta sum(y_pred * (1 - y_true)).

Regenerate (TensorFlow 2.21, Keras 3; the tests themselves need neither):

  /work/venvs/keras-tf/bin/python test/compare/keras_overlap_axis.py \
      test/compare/Inputs/overlap_axis [CASE ...]

One small MLP (Input((5,)) -> Dense(7, tanh) -> Dense(12, sigmoid) ->
Reshape((4, 3))) per case, trained with model.fit for 2 epochs on 24
examples at batch 8 (shuffle off, SGD(0.5, momentum 0.5): these losses'
gradients are small), then evaluated on 8 test examples in one batch, with
0/1 targets of shape (N, 4, 3). Every set is a whole number of batches.
Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/data.npz              x, y (and sample_weight) of the 24 examples
  CASE/val.npz               validation x, y (and sample_weight), one batch
  CASE/test.npz              test x, y (and sample_weight), one batch
  CASE/init.safetensors      every variable before fit
  CASE/expected.safetensors  every variable after it
  CASE/history.json          fit's epoch logs (loss, val_loss)
  CASE/evaluate.json         model.evaluate of the test set after fit
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, BATCH, EPOCHS, HELD_OUT = 24, 8, 2, 8


def build(keras):
    inputs = keras.Input((5,), name="input_layer")
    h = keras.layers.Dense(7, activation="tanh", name="hidden")(inputs)
    h = keras.layers.Dense(12, activation="sigmoid", name="out")(h)
    return keras.Model(inputs, keras.layers.Reshape((4, 3),
                                                    name="reshape")(h))


def cases(keras):
    """name -> a function of no arguments (called after
    keras.backend.clear_session(), so that Keras' default names do not
    count up from case to case) that makes (loss, weighted, validation)."""
    L = keras.losses
    return {
        "dice_axis_1_2": lambda: (L.Dice(axis=(1, 2)), True, True),
        # No sample_weight with a loss of (N, 4): Keras 3.15 multiplies it
        # by the (N,) weights as they are and fails ("Dimensions must be
        # equal, but are 4 and 8").
        "dice_axis_last": lambda: (L.Dice(axis=-1), False, True),
        "tversky_axis_1": lambda: (L.Tversky(alpha=0.3, beta=0.7, axis=1),
                                   False, False),
    }


def examples(rng, n):
    return {"x": rng.normal(0.0, 1.0, (n, 5)).astype(np.float32),
            "y": rng.integers(0, 2, (n, 4, 3)).astype(np.float32),
            "sample_weight": rng.uniform(0.2, 2.0, n).astype(np.float32)}


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    for name, case in cases(keras).items():
        if only and name not in only:
            continue
        keras.backend.clear_session()
        loss, weighted, validate = case()
        rng = np.random.default_rng(sum(map(ord, name)))
        keras.utils.set_random_seed(sum(map(ord, name)))
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        keep = ("x", "y", "sample_weight") if weighted else ("x", "y")
        train = examples(rng, EXAMPLES)
        val = examples(rng, HELD_OUT)
        test = examples(rng, HELD_OUT)
        train, val, test = ({k: a[k] for k in keep}
                            for a in (train, val, test))
        np.savez(os.path.join(out, "data.npz"), **train)
        np.savez(os.path.join(out, "test.npz"), **test)
        fit = {}
        if validate:
            np.savez(os.path.join(out, "val.npz"), **val)
            fit["validation_data"] = tuple(val[k] for k in keep)
        model = build(keras)
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5,
                                                     momentum=0.5),
                      loss=loss)
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
