"""Fixtures for keras-bn-short-batch.test: BatchNormalization in training
mode when an epoch ends with a short batch.

Regenerate (Keras 3 on any backend; the test itself needs none):

  KERAS_BACKEND=jax build/test-venv/bin/python \
      test/compare/keras_bn_short_batch.py test/compare/Inputs/bn_short_batch

Each case trains with model.fit for 2 epochs on 20 examples at batch 8
(shuffle off, validating on 10 more each epoch): each epoch is 3 steps, the
last of 4 examples, whose batch statistics Keras takes over those 4. A
momentum of 0.5 makes the moving statistics show every step's batch.

  mlp  Input((5,)) -> Dense(7) -> BatchNormalization -> ReLU -> Dense(4)
  cnn  Input((6, 6, 2)) -> Conv2D(4, 3, same) -> BatchNormalization ->
       ReLU -> Conv2D(3, 1) -> BatchNormalization(scale=False) ->
       GlobalAveragePooling2D -> Dense(3)

The layers before a BatchNormalization have no bias (as Keras advises):
its gradient is 0 but for rounding, which no relative check can compare.

  mlp_halves  the mlp on examples whose full batches are one half twice
       (rows 4-7 repeat rows 0-3): on 2 replicas each replica's batch
       statistics are then the batch's, so 2 replicas must give one
       device's numbers, the short batch (on replica 0 alone: replica 1
       holds its padding) included.

Writes to DIR/CASE: model.json, data.npz, val.npz, init.safetensors,
expected.safetensors (every variable after fit) and history.json.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, VALIDATION, BATCH, EPOCHS = 20, 10, 8, 2


def build(keras, name):
    L = keras.layers
    if name == "mlp":
        inputs = keras.Input((5,))
        x = L.Dense(7, use_bias=False)(inputs)
        x = L.BatchNormalization(momentum=0.5)(x)
        x = L.ReLU()(x)
        outputs = L.Dense(4, activation="softmax")(x)
        return keras.Model(inputs, outputs), (5,), 4
    inputs = keras.Input((6, 6, 2))
    x = L.Conv2D(4, 3, padding="same", use_bias=False)(inputs)
    x = L.BatchNormalization(momentum=0.5)(x)
    x = L.ReLU()(x)
    x = L.Conv2D(3, 1, use_bias=False)(x)
    x = L.BatchNormalization(momentum=0.5, scale=False)(x)
    x = L.GlobalAveragePooling2D()(x)
    outputs = L.Dense(3, activation="softmax")(x)
    return keras.Model(inputs, outputs), (6, 6, 2), 3


def main():
    directory = sys.argv[1]
    import keras

    for name in ("mlp", "cnn", "mlp_halves"):
        keras.utils.set_random_seed(7)
        rng = np.random.default_rng(sum(map(ord, name)))
        model, shape, classes = build(keras, name.split("_")[0])
        x = rng.normal(0.5, 1.5, (EXAMPLES,) + shape).astype(np.float32)
        y = rng.integers(0, classes, EXAMPLES).astype(np.int32)
        if name.endswith("_halves"):
            half = BATCH // 2
            for start in range(0, EXAMPLES - EXAMPLES % BATCH, BATCH):
                x[start + half:start + BATCH] = x[start:start + half]
                y[start + half:start + BATCH] = y[start:start + half]
        xv = rng.normal(0.5, 1.5, (VALIDATION,) + shape).astype(np.float32)
        yv = rng.integers(0, classes, VALIDATION).astype(np.int32)
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "data.npz"), x=x, y=y)
        np.savez(os.path.join(out, "val.npz"), x=xv, y=yv)
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.5),
            loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(json.loads(model.to_json()), f)
        write_safetensors(os.path.join(out, "init.safetensors"),
                          variables(model))
        history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS,
                            shuffle=False, verbose=0,
                            validation_data=(xv, yv))
        write_safetensors(os.path.join(out, "expected.safetensors"),
                          variables(model))
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})


if __name__ == "__main__":
    main()
