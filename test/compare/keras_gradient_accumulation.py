"""Fixtures for keras-gradient-accumulation.test: Keras 3's
gradient_accumulation_steps.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python \\
      test/compare/keras_gradient_accumulation.py \\
      test/compare/Inputs/grad_accumulation [CASE ...]

The model of keras_compile_options.py (Conv2D(3, 3) -> Flatten ->
Dense(3, softmax), sparse categorical cross-entropy) trained by model.fit
for 4 steps over 32 examples in batches of 8, in file order (shuffle off),
with gradient_accumulation_steps=2: Keras
(keras/src/optimizers/base_optimizer.py, _backend_apply_gradients) adds the
gradients of steps 1 and 3 to an accumulator and on steps 2 and 4 applies
the mean of the two (clipped, with weight decay) and resets it; its
`iterations`, which the bias corrections read, count applied updates
(floor(steps / 2)), while a learning-rate schedule reads the raw counter
(_iterations). Each batch differs, so the mean of two
gradients differs from either. Writes to DIR:

  train-images-idx3-ubyte    32 images 6x6x2, uint8 (graphrun reads them
  train-labels-idx1-ubyte    / 255), labels 0..2; t10k-* the same
  CASE/model.json            model.to_json(), compile config included
  CASE/init.safetensors      every variable before the steps
  CASE/expected.safetensors  every variable after 4 steps
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_compile_options import build  # noqa: E402
from keras_frozen_bn_one_step import variables, write_batch  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

STEPS = 4


def cases(keras):
    o = keras.optimizers
    s = keras.optimizers.schedules
    return {
        "sgd_momentum_accumulate": o.SGD(learning_rate=0.2, momentum=0.9,
                                         gradient_accumulation_steps=2),
        # A schedule, which Keras evaluates at its raw step counter
        # (_iterations: 1 and 3 on the two updates), not at iterations;
        # clipvalue on the mean gradient, and weight decay on update steps
        # only.
        "sgd_schedule_accumulate": o.SGD(
            learning_rate=s.ExponentialDecay(0.5, decay_steps=1,
                                             decay_rate=0.5),
            clipvalue=0.05, weight_decay=0.01,
            gradient_accumulation_steps=2),
        # Adam's bias correction at iterations + 1 = 1, 2 on the updates.
        "adam_accumulate": o.Adam(learning_rate=0.01, beta_1=0.5,
                                  gradient_accumulation_steps=2),
        # use_ema averages every step, with no momentum while iterations
        # (the updates applied) is 0, steps 1 and 2; it overwrites the
        # variables where iterations + 1 is a multiple of 2: steps 3, 4.
        "sgd_ema_accumulate": o.SGD(learning_rate=0.2, momentum=0.9,
                                    gradient_accumulation_steps=2,
                                    use_ema=True, ema_momentum=0.5,
                                    ema_overwrite_frequency=2),
    }


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(directory, exist_ok=True)
    import keras
    import tensorflow as tf

    rng = np.random.default_rng(5)
    images = rng.integers(0, 256, size=(32, 6, 6, 2), dtype=np.uint8)
    labels = rng.integers(0, 3, size=(32,), dtype=np.uint8)
    write_batch(directory, images, labels)
    x = images.astype(np.float32) / 255.0
    y = labels.astype(np.int32)
    for name, optimizer in cases(keras).items():
        if only and name not in only:
            continue
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        model = build(keras)
        model.compile(optimizer=optimizer,
                      loss="sparse_categorical_crossentropy")
        with open(os.path.join(out, "model.json"), "w") as f:
            f.write(model.to_json())
        before = variables(model)
        write_safetensors(os.path.join(out, "init.safetensors"), before)
        model.fit(x, y, batch_size=8, epochs=1, steps_per_epoch=STEPS,
                  shuffle=False, verbose=0)
        after = variables(model)
        write_safetensors(os.path.join(out, "expected.safetensors"), after)
        print(name, "iterations", int(model.optimizer.iterations),
              "raw", int(model.optimizer._iterations))
        for v in sorted(after):
            print("  %s: max change %.3g" % (
                v, float(np.abs(after[v] - before[v]).max())))
    print("tensorflow", tf.__version__, "keras", keras.__version__)


if __name__ == "__main__":
    main()
