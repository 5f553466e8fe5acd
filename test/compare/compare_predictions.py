"""Compares graphrun --predict's arrays with Keras' own predict.

Keras (its numpy backend) builds the model from its JSON, takes the
weights graphrun read (a safetensors file named "<layer>/<weight>", as
each variable's path), and predicts on the .npz's inputs (arrays named
after the input layers, or x). graphrun's predictions are an .npy (one
output) or an .npz of an array named after each output. Prints PASSED
when every output agrees within --atol.

  compare_predictions.py MODEL.json WEIGHTS.safetensors DATA.npz PRED
"""

import argparse
import sys

import keras
import numpy as np

import safetensors_io


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("weights")
    ap.add_argument("data")
    ap.add_argument("predictions")
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    with open(args.model) as f:
        model = keras.models.model_from_json(f.read())
    weights = safetensors_io.read(args.weights)
    for v in model.weights:
        v.assign(weights[v.path])
    data = np.load(args.data)
    names = [t.name.split(":")[0] for t in model.inputs]
    if len(names) == 1 and names[0] not in data:
        x = data["x"]
    else:
        x = {n: data[n] for n in names}
    theirs = model.predict(x, verbose=0)
    if not isinstance(theirs, (list, tuple)):
        theirs = [theirs]
    if args.predictions.endswith(".npz"):
        pred = np.load(args.predictions)
        output_names = model.output_names
        if sorted(pred.files) != sorted(output_names):
            print(f"FAILED: arrays {pred.files}, outputs {output_names}")
            return 1
        ours = [pred[n] for n in output_names]
    else:
        ours = [np.load(args.predictions)]
    failed = False
    for i, (a, b) in enumerate(zip(ours, theirs)):
        b = np.asarray(b).reshape(len(b), -1)
        if a.shape != b.shape:
            print(f"FAILED: output {i}: shape {a.shape}, Keras' {b.shape}")
            failed = True
            continue
        worst = float(np.max(np.abs(a - b)))
        print(f"output {i}: {a.shape}, worst {worst:.3g}")
        failed |= not worst <= args.atol
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
