"""Keras reads back the loss scaling graphrun trained and saved:

  loss_scale_keras_file.py MODEL.keras CHECKPOINT.safetensors \\
      loss_scale.json LossScaleOptimizer [GLOBAL_POLICY]

keras.saving.load_model opens the .keras file (under GLOBAL_POLICY, as a
run resumes under the policy it trained in) without a warning about
optimizer variables it skipped. The optimizer is a LossScaleOptimizer
(compiled as one, or wrapped by compile's auto_scale_loss around a
mixed_float16 model's plain optimizer, as Keras saves it and load_model
wraps it again), and its dynamic_scale, step_counter and iterations equal
Keras' own after the same fit (loss_scale.json, written by
keras_mixed_precision.py). The inner optimizer's slots equal the
checkpoint's. Prints "ok" last.
"""

import json
import sys
import warnings

import keras
import numpy as np

import safetensors_io


def main():
    path, checkpoint, scale_json, form = sys.argv[1:5]
    if len(sys.argv) > 5:
        keras.mixed_precision.set_global_policy(sys.argv[5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = keras.saving.load_model(path)
    skipped = [str(w.message) for w in caught
               if "Skipping variable loading" in str(w.message)]
    if skipped:
        print("FAIL: Keras skipped optimizer variables: %s" % skipped)
        return 1
    with open(scale_json) as f:
        keras_state = json.load(f)
    optimizer = model.optimizer
    inner = optimizer
    if form == "LossScaleOptimizer":
        if type(optimizer).__name__ != "LossScaleOptimizer":
            print("FAIL: a %s, not a LossScaleOptimizer" %
                  type(optimizer).__name__)
            return 1
        inner = optimizer.inner_optimizer
        got = {"dynamic_scale": float(np.asarray(optimizer.dynamic_scale)),
               "step_counter": int(np.asarray(optimizer.step_counter))}
        for key, value in got.items():
            print("%s: %s vs Keras %s" % (key, value, keras_state[key]))
            if value != keras_state[key]:
                print("FAIL")
                return 1
    iterations = int(np.asarray(inner.iterations))
    print("iterations: %d vs Keras %d" % (iterations,
                                          keras_state["iterations"]))
    if iterations != keras_state["iterations"]:
        print("FAIL")
        return 1
    # Keras names a slot <optimizer>/<layer>_<weight>_<slot>; graph's
    # checkpoint <layer>/<weight>/<slot> (Adam: momentum is m, velocity v).
    ours = safetensors_io.read(checkpoint)
    slots = {"momentum": "m", "velocity": "v"}
    compared = 0
    for v in inner.variables:
        name = v.path.split("/", 1)[1]
        for keras_slot, slot in slots.items():
            if not name.endswith("_" + keras_slot):
                continue
            layer, weight = name[:-len(keras_slot) - 1].rsplit("_", 1)
            key = "%s/%s/%s" % (layer, weight, slot)
            if key in ours:
                compared += 1
                if not np.array_equal(np.asarray(v).reshape(-1),
                                      ours[key].reshape(-1)):
                    print("FAIL: %s differs from the checkpoint's %s" %
                          (v.path, key))
                    return 1
    print("%d slots equal the checkpoint's" % compared)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
