"""Fixtures for Keras 3's multi-output (and two-input) models: one loss per
output (a dict or a list of them, or one loss for every output), the
loss_weights that sum them, per-output metrics and the logs Keras names
after the outputs (OUTPUT_loss, OUTPUT_METRIC, val_*), a sample_weight
array shared by every output, validation and model.evaluate.

Regenerate (TensorFlow 2.21, Keras 3; the tests themselves need neither):

  /work/venvs/keras-tf/bin/python test/compare/keras_multi_output.py \
      test/compare/Inputs/multi_output [CASE ...]

One small model per case: Input x (5,) -> Dense(7, tanh) "trunk" -> two
heads (two_inputs: inputs a (5,) and b (3,), concatenated -> Dense(6,
relu) "trunk" -> two heads), the outputs a list in the heads' order,
trained with model.fit for 2 epochs on 24 examples at batch 8 (shuffle off,
SGD(0.1, momentum 0.5)), then evaluated on 8 test examples in one batch.
Every set is a whole number of batches: under the TF backend Keras'
per-output loss trackers weigh every batch alike. Writes to DIR:

  CASE/model.json            model.to_json(), compile config included
  CASE/data.npz              the 24 examples: x (or one array per input,
                             named as the input layer), one target per
                             output named as its output layer, and
                             sample_weight (N,) when the case weighs them
  CASE/val.npz               the same for validation, one batch (if used)
  CASE/test.npz              the same for model.evaluate, one batch
  CASE/init.safetensors      every variable before fit
  CASE/expected.safetensors  every variable after it
  CASE/history.json          fit's epoch logs (loss, OUT_loss, metrics, val_*)
  CASE/evaluate.json         model.evaluate of the test set after fit

A single sample_weight array with several outputs: Keras 3.15 takes it
with y a list in the outputs' order (y a dict then fails with KeyError: 0
for a model whose outputs are a list), and weighs every output's loss with
it.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, BATCH, EPOCHS, HELD_OUT = 24, 8, 2, 8


def trunk_model(keras, heads):
    """x (5,) -> Dense(7, tanh) "trunk" -> heads [(name, units,
    activation)]."""
    x = keras.Input((5,), name="x")
    h = keras.layers.Dense(7, activation="tanh", name="trunk")(x)
    return keras.Model(x, [keras.layers.Dense(units, activation=activation,
                                              name=name)(h)
                           for name, units, activation in heads])


def two_input_model(keras):
    a = keras.Input((5,), name="a")
    b = keras.Input((3,), name="b")
    h = keras.layers.Concatenate(name="concat")([a, b])
    h = keras.layers.Dense(6, activation="relu", name="trunk")(h)
    return keras.Model(
        [a, b], [keras.layers.Dense(2, name="out_a")(h),
                 keras.layers.Dense(1, activation="sigmoid",
                                    name="out_b")(h)])


def cases(keras):
    """name -> a function of no arguments (called after
    keras.backend.clear_session(), so that Keras' default names do not
    count up from case to case) that makes (model, compile arguments
    besides the optimizer, {input: width}, {output: targets}, weighted,
    validation)."""
    L, M = keras.losses, keras.metrics
    return {
        "dict_losses": lambda: (
            trunk_model(keras, [("reg", 3, None), ("cls", 4, "softmax")]),
            dict(loss={"reg": "mse",
                       "cls": "sparse_categorical_crossentropy"},
                 loss_weights={"reg": 0.5, "cls": 2.0},
                 metrics={"reg": ["mae", M.RootMeanSquaredError()],
                          "cls": ["accuracy"]}),
            {"x": 5}, {"reg": ("real", 3), "cls": ("classes", 4)},
            True, True),
        "list_losses": lambda: (
            trunk_model(keras, [("bin", 1, "sigmoid"), ("cat", 3,
                                                        "softmax")]),
            dict(loss=[L.BinaryCrossentropy(),
                       L.CategoricalCrossentropy(label_smoothing=0.1)],
                 loss_weights=[1.0, 0.3],
                 metrics=[["accuracy"], ["accuracy", M.AUC(name="auc")]]),
            {"x": 5}, {"bin": ("binary", 1), "cat": ("onehot", 3)},
            False, False),
        "two_inputs": lambda: (
            two_input_model(keras),
            dict(loss={"out_a": "huber", "out_b": "binary_crossentropy"},
                 metrics={"out_b": ["accuracy"]}),
            {"a": 5, "b": 3}, {"out_a": ("real", 2), "out_b": ("binary", 1)},
            False, False),
        # One loss for every output. A flat metrics list must have one
        # entry per output (metrics=["mae"] fails: "tuple arity mismatch;
        # expected: 2, got: 1"): ["mae", "mse"] logs h1_mae and h2_mse.
        "single_loss_for_both": lambda: (
            trunk_model(keras, [("h1", 2, None), ("h2", 2, None)]),
            dict(loss="mse", metrics=["mae", "mse"]),
            {"x": 5}, {"h1": ("real", 2), "h2": ("real", 2)}, False, False),
    }


def targets(kind, units, rng, n):
    if kind == "classes":
        return rng.integers(0, units, n).astype(np.int32)
    if kind == "onehot":
        return np.eye(units, dtype=np.float32)[rng.integers(0, units, n)]
    if kind == "binary":
        return rng.integers(0, 2, (n, units)).astype(np.float32)
    return rng.normal(0.5, 1.0, (n, units)).astype(np.float32)


def examples(inputs, outputs, weighted, rng, n):
    arrays = {name: rng.normal(0.0, 1.0, (n, width)).astype(np.float32)
              for name, width in inputs.items()}
    arrays.update({name: targets(kind, units, rng, n)
                   for name, (kind, units) in outputs.items()})
    if weighted:
        arrays["sample_weight"] = rng.uniform(0.2, 2.0, n).astype(np.float32)
    return arrays


def split(arrays, inputs, outputs):
    """(x, y, sample_weight) as fit takes them: x an array or a list in the
    inputs' order, y a list in the outputs' order."""
    x = [arrays[name] for name in inputs]
    return (x[0] if len(x) == 1 else x, [arrays[name] for name in outputs],
            arrays.get("sample_weight"))


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    import keras

    for name, case in cases(keras).items():
        if only and name not in only:
            continue
        keras.backend.clear_session()
        rng = np.random.default_rng(sum(map(ord, name)))
        keras.utils.set_random_seed(sum(map(ord, name)))
        model, compile_args, inputs, outputs, weighted, validate = case()
        assert list(inputs) == [t._keras_history.operation.name
                                for t in model.inputs], name
        assert list(outputs) == list(model.output_names), (
            name, model.output_names)
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        train = examples(inputs, outputs, weighted, rng, EXAMPLES)
        val = examples(inputs, outputs, weighted, rng, HELD_OUT)
        test = examples(inputs, outputs, weighted, rng, HELD_OUT)
        np.savez(os.path.join(out, "data.npz"), **train)
        np.savez(os.path.join(out, "test.npz"), **test)
        fit = {}
        if validate:
            np.savez(os.path.join(out, "val.npz"), **val)
            x, y, w = split(val, inputs, outputs)
            fit["validation_data"] = (x, y, w) if weighted else (x, y)
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1,
                                                     momentum=0.5),
                      **compile_args)
        config = json.loads(model.to_json())
        assert "compile_config" in config, name
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(config, f)
        write_safetensors(os.path.join(out, "init.safetensors"),
                          variables(model))
        x, y, w = split(train, inputs, outputs)
        history = model.fit(x, y, sample_weight=w, batch_size=BATCH,
                            epochs=EPOCHS, shuffle=False, verbose=0, **fit)
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        x, y, w = split(test, inputs, outputs)
        result = model.evaluate(x, y, sample_weight=w, batch_size=HELD_OUT,
                                return_dict=True, verbose=0)
        with open(os.path.join(out, "evaluate.json"), "w") as f:
            json.dump({k: float(v) for k, v in result.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})
        print(name, "evaluate", {k: "%.6f" % v for k, v in result.items()})


if __name__ == "__main__":
    main()
