"""Precision and Recall options that Keras resolves in ways a flat reading
gets wrong, written by real Keras (its numpy backend) for
keras-confusion-options.test:

  keras_confusion_options.py DIR

- `top_k` with an explicit `thresholds=0.5` (or `[0.5]`): Keras applies the
  0.5; only `thresholds=None` with a top_k means NEG_INF (exactly the top k).
- `top_k` and `class_id` on an output of rank 3: Keras takes the top k and
  the column along the last axis of each position, not of the flattened
  example.

Each case DIR/<case>/ gets m.keras (the compiled model with its weights),
eval.npz (x, y, sample_weight) and evaluate.json (model.evaluate's
return_dict: the loss weighted by sample_weight, the compiled metrics not,
as Keras weighs them), for compare_evaluation.py.
"""

import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")

import numpy as np  # noqa: E402
import keras  # noqa: E402

L, M = keras.losses, keras.metrics
EXAMPLES = 20  # batches of 8: a short last batch of 4


def model(shape, units, activation):
    keras.utils.set_random_seed(11)
    x = keras.Input(shape, name="x")
    h = keras.layers.Dense(7, activation="tanh", name="hidden")(x)
    y = keras.layers.Dense(units, activation=activation, name="out")(h)
    return keras.Model(x, y)


def cases(rng):
    """name -> (model, x, y, loss, metrics)."""
    x2 = rng.normal(0, 1, (EXAMPLES, 5)).astype(np.float32)
    y2 = np.eye(5, dtype=np.float32)[rng.integers(0, 5, EXAMPLES)]
    x3 = rng.normal(0, 1, (EXAMPLES, 3, 5)).astype(np.float32)
    y3 = rng.integers(0, 2, (EXAMPLES, 3, 4)).astype(np.float32)
    return {
        "top_k_threshold": (
            model((5,), 5, "softmax"), x2, y2, L.CategoricalCrossentropy(),
            [M.Precision(top_k=2, thresholds=0.5, name="p_top2_t05"),
             M.Recall(top_k=1, thresholds=[0.5], name="r_top1_t05"),
             M.Precision(top_k=2, thresholds=0.15, name="p_top2_t015"),
             M.Precision(top_k=2, name="p_top2"),
             M.Recall(top_k=3, name="r_top3")]),
        "rank3": (
            model((3, 5), 4, "sigmoid"), x3, y3, L.BinaryCrossentropy(),
            [M.Precision(top_k=2, name="p_top2"),
             M.Recall(top_k=1, thresholds=0.4, name="r_top1_t04"),
             M.Recall(class_id=1, name="r_c1"),
             M.Precision(class_id=3, top_k=2, name="p_c3_top2"),
             M.Precision(name="p"), M.AUC(name="auc"),
             "binary_accuracy"]),
    }


def main():
    directory = sys.argv[1]
    rng = np.random.default_rng(7)
    for name, (m, x, y, loss, metrics) in cases(rng).items():
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss,
                  metrics=metrics)
        m.save(os.path.join(out, "m.keras"))
        # (N, 1): Keras multiplies a rank-3 output's (N, T) losses by it.
        w = rng.uniform(0.2, 2.0, (EXAMPLES, 1)).astype(np.float32)
        np.savez(os.path.join(out, "eval.npz"), x=x, y=y, sample_weight=w)
        result = m.evaluate(x, y, sample_weight=w, batch_size=8,
                            return_dict=True, verbose=0)
        with open(os.path.join(out, "evaluate.json"), "w") as f:
            json.dump({k: float(v) for k, v in result.items()}, f, indent=1)
        print(name, {k: round(float(v), 6) for k, v in result.items()})


if __name__ == "__main__":
    main()
