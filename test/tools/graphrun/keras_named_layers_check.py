"""A .keras and a .weights.h5 of a model whose layers have their own names:
every Keras layer's weights, loaded by real Keras 3, equal the trained
ones (the run's safetensors, by "<layer>/<weight>").

    keras_named_layers_check.py M.keras W.weights.h5 W.safetensors
"""

import json
import os
import sys
import zipfile

import keras
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "compare"))
import safetensors_io  # noqa: E402

keras_path, weights_path, trained_path = sys.argv[1:4]
trained = safetensors_io.read(trained_path)
loaded = keras.models.load_model(keras_path)
fresh = keras.models.model_from_json(
    zipfile.ZipFile(keras_path).read("config.json").decode())
fresh.load_weights(weights_path)
for m in (loaded, fresh):
    for layer in m.layers:
        for w in layer.weights:
            want = trained[f"{layer.name}/{w.name}"]
            if not np.array_equal(np.asarray(w), want):
                print(f"FAIL: {layer.name}/{w.name} differs")
                sys.exit(1)
for layer in loaded.layers:
    if layer.weights:
        print(f"{layer.name}: {len(layer.weights)} weights as trained")
print("ok")
