"""Keras files of a model whose layers are not Keras' defaults (their own
names, a nested model): every weight real Keras 3 loads equals the trained
one (the run's safetensors, by "<layer>/<weight>").

    keras_named_layers_check.py M.keras W.safetensors WEIGHTS...

loads M.keras with load_model, and each WEIGHTS file (.weights.h5, .h5)
into the model M.keras' config.json describes.
"""

import os
import sys
import zipfile

import keras
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "compare"))
import safetensors_io  # noqa: E402

keras_path, trained_path, *weights_paths = sys.argv[1:]
trained = safetensors_io.read(trained_path)
config = zipfile.ZipFile(keras_path).read("config.json").decode()
models = [("load_model(.keras)", keras.models.load_model(keras_path))]
for path in weights_paths:
    fresh = keras.models.model_from_json(config)
    fresh.load_weights(path)
    models.append((f"load_weights({os.path.basename(path)})", fresh))
for how, m in models:
    for w in m.weights:
        # A variable's path ends "<layer>/<weight>", a nested model's too.
        name = "/".join(w.path.split("/")[-2:])
        if not np.array_equal(np.asarray(w), trained[name]):
            print(f"FAIL: {how}: {name} differs from the trained weight")
            sys.exit(1)
    print(f"{how}: {len(m.weights)} weights as trained")
print("ok")
