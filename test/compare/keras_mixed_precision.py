"""Fixtures for Keras 3's mixed precision dtype policies (mixed_bfloat16,
mixed_float16): the variables stay float32 and each layer computes in its
policy's compute dtype (bfloat16 or float16: Keras casts the layer's inputs
to it and reads its variables cast to it); a layer given dtype="float32"
(the softmax head) casts its input back to float32; the loss casts y_pred to
float32. Under mixed_float16 compile wraps the optimizer in a
LossScaleOptimizer (initial scale 2**15, doubled after 2000 finite steps,
halved and the step skipped on a non-finite gradient); loss_scale.json
records it.

Regenerate (TensorFlow 2.21, Keras 3, on the CPU; the tests themselves need
neither):

  build/keras-venv/bin/python test/compare/keras_mixed_precision.py \
      test/compare/Inputs/mixed_precision [CASE ...]

(build/keras-venv from bench/keras-venv.sh.) One small model per case,
built under keras.mixed_precision.set_global_policy(POLICY) (float32 again
after it), trained with model.fit for 1 epoch on 24 examples at batch 8
(3 steps, shuffle off), metrics ["accuracy"], SparseCategoricalCrossentropy:

  mlp_bfloat16            mixed_bfloat16, Input((5,)) -> Dense(7, tanh) ->
                          Dense(5) -> Activation(softmax, dtype float32),
                          SGD(0.1)
  mlp_bfloat16_bf16_head  the same, Dense(5, softmax) under the policy (no
                          float32 head)
  cnn_bfloat16            mixed_bfloat16, Input((8, 8, 1)) -> Conv2D(4, 3,
                          relu) -> MaxPooling2D(2) -> BatchNormalization ->
                          Flatten -> Dense(5) -> Activation(softmax, dtype
                          float32), Adam(0.01)
  mlp_float16             mixed_float16, mlp_bfloat16's model, SGD(0.1)
                          (wrapped in a LossScaleOptimizer by compile)
  mlp_float16_skips       mixed_float16, the same model, 128 examples (16
                          steps), LossScaleOptimizer(Adam(0.01),
                          initial_scale=2**20, dynamic_growth_steps=2)
                          given to compile: the first steps overflow float16
                          and are skipped, the scale halves down, then
                          doubles every 2 finite steps and overflows again

Writes to DIR:

  CASE/model.json            model.to_json(), compile config included (each
                             layer's "dtype" a DTypePolicy dict)
  CASE/data.npz              x float32, y int32 of 24 examples
  CASE/init.safetensors      every variable before fit (float32)
  CASE/expected.safetensors  every variable after it
  CASE/history.json          fit's epoch logs (loss, accuracy)
  mlp_float16*/loss_scale.json  the LossScaleOptimizer's settings, its
                             dynamic_scale, step_counter and iterations
                             after fit, and after each batch ("batches":
                             the scale and iterations after it)

It also trains each bfloat16 case's model again in float32 from the same
init and prints how far the mixed precision weights are from it (nothing
written).

The bfloat16 numbers are those of TensorFlow's CPU kernels on the machine
that wrote them (x86-64 without AVX512-BF16/AMX): there a bf16 MatMul (and
its gradients) truncates its float32 result to bf16, Conv2D, Cast, the
element-wise ops and Tanh round to nearest even, BiasAddGrad sums in bf16
row by row. mlp_bfloat16's expected.safetensors is reproduced bit for bit
by that model of it; a CPU with bf16 instructions may round differently.
model.json does not name the model's own policy (only its layers'):
keras.models.model_from_json under the float32 global policy, then
compile_from_config, gives a plain SGD, no LossScaleOptimizer.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keras_frozen_bn_one_step import variables  # noqa: E402
from safetensors_io import write as write_safetensors  # noqa: E402

EXAMPLES, BATCH, EPOCHS = 24, 8, 1
CLASSES = 5


def mlp(keras, head):
    """Dense(7, tanh) -> Dense(5) -> a float32 softmax, or (head False)
    Dense(5, softmax) under the policy."""
    keras.utils.set_random_seed(11)
    inputs = keras.Input((5,), name="input_layer")
    h = keras.layers.Dense(7, activation="tanh", name="hidden")(inputs)
    if not head:
        outputs = keras.layers.Dense(CLASSES, activation="softmax",
                                     name="out")(h)
        return keras.Model(inputs, outputs)
    h = keras.layers.Dense(CLASSES, name="out")(h)
    outputs = keras.layers.Activation("softmax", dtype="float32",
                                      name="softmax")(h)
    return keras.Model(inputs, outputs)


def cnn(keras):
    keras.utils.set_random_seed(11)
    inputs = keras.Input((8, 8, 1), name="input_layer")
    h = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    h = keras.layers.MaxPooling2D(2, name="pool")(h)
    h = keras.layers.BatchNormalization(name="bn")(h)
    h = keras.layers.Flatten(name="flatten")(h)
    h = keras.layers.Dense(CLASSES, name="out")(h)
    outputs = keras.layers.Activation("softmax", dtype="float32",
                                      name="softmax")(h)
    return keras.Model(inputs, outputs)


def cases(keras):
    """name -> (policy, model maker, optimizer maker, input shape, scale of
    x[, examples]). x ~ N(0, scale^2): the MLP's pre-activations and the
    CNN's convolutions come out O(1)."""
    sgd = lambda: keras.optimizers.SGD(learning_rate=0.1)  # noqa: E731
    skips = lambda: keras.optimizers.LossScaleOptimizer(  # noqa: E731
        keras.optimizers.Adam(learning_rate=0.01), initial_scale=2.0**20,
        dynamic_growth_steps=2)
    return {
        "mlp_bfloat16": ("mixed_bfloat16", lambda: mlp(keras, True), sgd,
                         (5,), 1.0),
        "mlp_bfloat16_bf16_head": ("mixed_bfloat16",
                                   lambda: mlp(keras, False), sgd, (5,), 1.0),
        "cnn_bfloat16": ("mixed_bfloat16", lambda: cnn(keras),
                         lambda: keras.optimizers.Adam(learning_rate=0.01),
                         (8, 8, 1), 1.0),
        "mlp_float16": ("mixed_float16", lambda: mlp(keras, True), sgd,
                        (5,), 1.0),
        "mlp_float16_skips": ("mixed_float16", lambda: mlp(keras, True),
                              skips, (5,), 1.0, 128),
    }


def train(keras, policy, make, optimizer, data, init=None, strategy=None):
    """A model made and compiled under `policy` (float32 again after), in
    `strategy`'s scope if any, given `init`'s variables if any: (model,
    variables before, history)."""
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy(policy)
    try:
        if strategy is not None:
            with strategy.scope():
                model = make()
                model.compile(
                    optimizer=optimizer(),
                    loss=keras.losses.SparseCategoricalCrossentropy(),
                    metrics=["accuracy"])
        else:
            model = make()
            model.compile(optimizer=optimizer(),
                          loss=keras.losses.SparseCategoricalCrossentropy(),
                          metrics=["accuracy"])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    if init is not None:
        for layer in model.layers:
            for w in layer.weights:
                w.assign(init[layer.name + "/" + w.name])
    before = variables(model)
    keras.utils.set_random_seed(5)
    batches = []

    class Scale(keras.callbacks.Callback):
        """The loss scale and iterations after each batch."""

        def on_train_batch_end(self, batch, logs=None):
            opt = self.model.optimizer
            if hasattr(opt, "dynamic_scale"):
                batches.append(
                    {"dynamic_scale": float(opt.dynamic_scale.numpy()),
                     "step_counter": int(opt.step_counter.numpy()),
                     "iterations": int(opt.iterations.numpy())})

    history = model.fit(data["x"], data["y"], batch_size=BATCH,
                        epochs=EPOCHS, shuffle=False, verbose=0,
                        callbacks=[Scale()])
    history.batches = batches
    return model, before, history


def loss_scale(optimizer, batches):
    """The LossScaleOptimizer's settings and dynamic scale."""
    return {"class": type(optimizer).__name__,
            "inner_optimizer": type(optimizer.inner_optimizer).__name__,
            "initial_scale": float(optimizer.initial_scale),
            "dynamic_growth_steps": int(optimizer.dynamic_growth_steps),
            "dynamic_scale": float(optimizer.dynamic_scale.numpy()),
            "step_counter": int(optimizer.step_counter.numpy()),
            "iterations": int(optimizer.iterations.numpy()),
            "batches": batches}


def compare(name, init, mixed, f32):
    """Prints, for each variable, the largest |mixed - f32| relative to the
    largest |f32|, and relative to the largest move fit made in float32."""
    worst = 0.0
    for key in mixed:
        diff = float(np.abs(mixed[key] - f32[key]).max())
        scale = float(np.abs(f32[key]).max()) or 1.0
        moved = float(np.abs(f32[key] - init[key]).max())
        worst = max(worst, diff / scale)
        print("  %s %s: max|bf16-f32| %.3g, / max|f32| %.3g, / max f32 move"
              " %s" % (name, key, diff, diff / scale,
                       "%.3g" % (diff / moved) if moved else "-"))
    print("%s: max relative weight difference bf16 vs float32 %.3g"
          % (name, worst))


def main():
    directory = sys.argv[1]
    only = set(sys.argv[2:])
    # The CPU only (tensorflow-cpu has no GPU anyway).
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf
    # Two logical CPUs for MirroredStrategy (before TensorFlow starts).
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras

    for name, case in cases(keras).items():
        if only and name not in only:
            continue
        policy, make, optimizer, shape, scale = case[:5]
        examples = case[5] if len(case) > 5 else EXAMPLES
        rng = np.random.default_rng(sum(map(ord, name)))
        data = {"x": (scale * rng.normal(0.0, 1.0, (examples,) + shape)
                      ).astype(np.float32),
                "y": rng.integers(0, CLASSES, examples).astype(np.int32)}
        out = os.path.join(directory, name)
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "data.npz"), **data)

        model, before, history = train(keras, policy, make, optimizer, data)
        config = json.loads(model.to_json())
        assert "compile_config" in config, name
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "InputLayer":
                continue  # its dtype is the input's, a plain "float32"
            assert layer["config"]["dtype"]["class_name"] == "DTypePolicy", (
                name, layer["config"]["name"])
        with open(os.path.join(out, "model.json"), "w") as f:
            json.dump(config, f)
        after = variables(model)
        for key, value in list(before.items()) + list(after.items()):
            assert value.dtype == np.float32, (name, key)
        write_safetensors(os.path.join(out, "init.safetensors"), before)
        write_safetensors(os.path.join(out, "expected.safetensors"), after)
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({k: [float(v) for v in vs]
                       for k, vs in history.history.items()}, f, indent=1)
        print(name, {k: ["%.6f" % v for v in vs]
                     for k, vs in history.history.items()})

        if policy == "mixed_float16":
            scaled = model.optimizer
            assert type(scaled).__name__ == "LossScaleOptimizer", scaled
            state = loss_scale(scaled, history.batches)
            with open(os.path.join(out, "loss_scale.json"), "w") as f:
                json.dump(state, f, indent=1)
            print(name, "loss scale", state)
            if name.endswith("_skips"):
                # The same fit under MirroredStrategy on 2 logical CPUs is
                # no oracle: Keras 3.x's LossScaleOptimizer (TensorFlow
                # path) decides finiteness on replica 0's gradients before
                # they are all-reduced, so a step that overflows on replica
                # 1 only is applied and NaN enters the weights. Printed,
                # not written.
                strategy = tf.distribute.MirroredStrategy(
                    ["/cpu:0", "/cpu:1"])
                mirrored, _, mhistory = train(keras, policy, make, optimizer,
                                              data, init=before,
                                              strategy=strategy)
                finite = all(bool(np.isfinite(v).all())
                             for v in variables(mirrored).values())
                print(name, "MirroredStrategy: loss scale after each batch",
                      [b["dynamic_scale"] for b in mhistory.batches],
                      "weights finite:", finite)
        else:
            f32_model, _, f32_history = train(keras, "float32", make,
                                              optimizer, data, init=before)
            compare(name, before, after, variables(f32_model))
            print(name, "float32", {k: ["%.6f" % v for v in vs]
                                    for k, vs in f32_history.history.items()})


if __name__ == "__main__":
    main()
