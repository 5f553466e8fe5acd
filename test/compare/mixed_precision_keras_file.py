"""Keras reads back a mixed-precision model graphrun trained and saved:

  mixed_precision_keras_file.py MODEL.keras WEIGHTS.safetensors POLICIES

Every variable of the .keras file is float32 (Keras' mixed policies keep
float32 variables) and equals graphrun's --save-weights of the same run;
each layer keeps its dtype policy (POLICIES: name=policy,...). Prints "ok"
last.
"""

import sys

import keras
import numpy as np

import safetensors_io


def main():
    path, weights, policies = sys.argv[1:4]
    model = keras.saving.load_model(path)
    ours = safetensors_io.read(weights)
    for pair in policies.split(","):
        name, policy = pair.split("=")
        got = model.get_layer(name).dtype_policy.name
        if got != policy:
            print("FAIL: layer %s has policy %s, expected %s" % (name, got,
                                                                 policy))
            return 1
    for v in model.weights:
        if str(v.dtype) != "float32":
            print("FAIL: %s is %s" % (v.path, v.dtype))
            return 1
        if not np.array_equal(np.asarray(v), ours[v.path]):
            print("FAIL: %s differs from --save-weights" % v.path)
            return 1
    print("%d float32 variables, as trained; policies kept" %
          len(model.weights))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
