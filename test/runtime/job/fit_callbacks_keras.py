"""Keras' own fit callbacks against runtime/job/FitCallbacks, on one table.

    fit_callbacks_keras.py --driver fit-callbacks-replay \
        --table Inputs/callback_sequences.json --work DIR

For every case of the table, runs Keras 3's EarlyStopping, ReduceLROnPlateau,
ModelCheckpoint(save_best_only=True) and CSVLogger on a tiny compiled model,
calling on_train_begin, on_epoch_end and on_train_end with the case's logs as
fit() does (one logs dict shared by the callbacks of an epoch; no more epochs
after one that set model.stop_training), and records each decision:
EarlyStopping's stop, wait, best and kept weights per epoch and the epoch whose
weights on_train_end set back (the model's first weight holds the epoch's
number, -1 before on_train_end); ReduceLROnPlateau's learning rate (the
optimizer's float32 variable), reductions, wait, cooldown and best;
ModelCheckpoint's saves and best; CSVLogger's file, byte for byte; each
warning about a missing key; and what the callbacks print with verbose=1.
Then it runs the driver on the same table and requires the same record.

Learning rates are compared exactly: both sides compute max(lr * factor,
min_lr) in float64 from the same float32 and round it to float32 to nearest,
so any difference is a real one (a float32(min_lr) comparison done in
float64, a rounding done twice), not noise to tolerate.

It also checks the driver's Python float repr() on many doubles and
kerasMetricDirection against the direction of the metric Keras' compile()
makes from each name. On the numpy backend Keras compares monitored values
in float64, on TensorFlow's in float32: the driver is told which.
"""

import argparse
import contextlib
import io
import json
import math
import os
import random
import struct
import subprocess
import sys
import warnings

import keras
import numpy as np
from keras.src.trainers import compile_utils

INT_KEYS = {"patience", "verbose", "cooldown", "start_from_epoch"}
FLOAT_KEYS = {"min_delta", "factor", "min_lr", "baseline",
              "initial_value_threshold"}
BOOL_KEYS = {"restore_best_weights"}

# Metric names and the labels a model needs to compile them.
SPARSE, CATEGORICAL, BINARY = "sparse", "categorical", "binary"
KNOWN_METRICS = {
    "accuracy": SPARSE, "acc": SPARSE,
    "sparse_categorical_accuracy": SPARSE,
    "sparse_top_k_categorical_accuracy": SPARSE,
    "sparse_categorical_crossentropy": SPARSE,
    "categorical_accuracy": CATEGORICAL,
    "top_k_categorical_accuracy": CATEGORICAL,
    "categorical_crossentropy": CATEGORICAL, "kl_divergence": CATEGORICAL,
    "categorical_hinge": CATEGORICAL, "cosine_similarity": CATEGORICAL,
    "binary_accuracy": BINARY, "auc": BINARY, "precision": BINARY,
    "recall": BINARY, "f1_score": BINARY, "r2_score": BINARY,
    "pearson_correlation": BINARY, "concordance_correlation": BINARY,
    "mae": BINARY, "mse": BINARY, "mape": BINARY, "msle": BINARY,
    "mean_absolute_error": BINARY, "mean_squared_error": BINARY,
    "mean_absolute_percentage_error": BINARY,
    "mean_squared_logarithmic_error": BINARY,
    "root_mean_squared_error": BINARY, "binary_crossentropy": BINARY,
    "poisson": BINARY, "hinge": BINARY, "squared_hinge": BINARY,
}
# Names compile() refuses or that are no metric: no direction.
UNKNOWN_METRICS = ["loss", "val_accuracy", "learning_rate", "f2", "iou",
                   "log_cosh", "binary_focal_crossentropy"]


def kwargs_of(text):
    """graphrun's key=value,... as Keras' keyword arguments."""
    out = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key in INT_KEYS:
            value = int(value)
        elif key in FLOAT_KEYS:
            value = float(value)
        elif key in BOOL_KEYS:
            value = value in ("true", "True", "1")
        out[key] = value
    return out


def log_value(v):
    return float(v)  # "nan", "inf", "-inf" and numbers alike


def model_with(metrics, kind=SPARSE):
    """A compiled model whose compile metrics are built (evaluate once), so
    that mode=auto finds their directions as it does after fit's first
    epoch."""
    rng = np.random.default_rng(0)
    x = rng.random((8, 3), dtype=np.float32)
    if kind == BINARY:
        y = rng.integers(0, 2, (8, 1)).astype("float32")
        out, loss = keras.layers.Dense(1, activation="sigmoid"), \
            "binary_crossentropy"
    else:
        labels = np.arange(8) % 3
        y = labels if kind == SPARSE else np.eye(3, dtype="float32")[labels]
        out = keras.layers.Dense(3, activation="softmax")
        loss = ("sparse_categorical_crossentropy" if kind == SPARSE
                else "categorical_crossentropy")
    model = keras.Sequential([keras.Input((3,)), out])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01),
                  loss=loss, metrics=list(metrics))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.evaluate(x, y, verbose=0)
    return model


def compiled_directions(model):
    out = {}
    for m in model.metrics:
        if isinstance(m, (compile_utils.CompileMetrics,
                          compile_utils.MetricsList)):
            for k in m.metrics:
                out[k.name] = getattr(k, "_direction", None)
    return out


def keras_directions():
    truth = {}
    for kind in (SPARSE, CATEGORICAL, BINARY):
        names = [n for n, k in KNOWN_METRICS.items() if k == kind]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # correlations of constant data
            truth.update(compiled_directions(model_with(names, kind)))
    for name in UNKNOWN_METRICS:
        try:
            keras.metrics.get(name)
            known = name not in ("loss", "val_accuracy", "learning_rate")
        except ValueError:
            known = False
        assert not known, f"Keras knows {name}: move it to KNOWN_METRICS"
        truth[name] = None
    return truth


def set_marker(model, value):
    w = model.get_weights()
    w[0][0, 0] = value
    model.set_weights(w)


def marker(model):
    return float(model.get_weights()[0][0, 0])


def best(v):
    return None if v is None else repr(float(v))


class Recorder:
    """Runs one case through Keras' classes."""

    def __init__(self, work, models):
        self.work = work
        self.models = models

    def model(self, metrics, lr):
        key = tuple(metrics)
        if key not in self.models:
            self.models[key] = model_with(metrics)
        model = self.models[key]
        model.optimizer.learning_rate = lr
        model.stop_training = False
        return model

    def run(self, case):
        name = case["name"]
        model = self.model(case.get("compile_metrics", []),
                           case.get("learning_rate", 0.01))
        saves = []
        # ModelCheckpoint saves through the model: count, do not write.
        object.__setattr__(model, "save_weights",
                           lambda *a, **k: saves.append(a[0]))
        callbacks = []  # (type, callback, extra)
        for i, spec in enumerate(case["callbacks"]):
            kind = spec["type"]
            kw = kwargs_of(spec.get("options", ""))
            if kind == "early_stopping":
                cb = keras.callbacks.EarlyStopping(**kw)
            elif kind == "reduce_lr_on_plateau":
                cb = keras.callbacks.ReduceLROnPlateau(**kw)
                reduced = []
                original = cb._reduce_optimizer_lr

                def reduce(*a, original=original, reduced=reduced, **k):
                    r = original(*a, **k)
                    reduced.append(r)
                    return r
                cb._reduce_optimizer_lr = reduce
                cb.reduced = reduced
            elif kind == "checkpoint_best":
                cb = keras.callbacks.ModelCheckpoint(
                    "best.weights.h5", save_best_only=True,
                    save_weights_only=True, **kw)
            elif kind == "csv_logger":
                path = os.path.join(self.work, f"{name}.{i}.keras.csv")
                if "initial" in spec:
                    with open(path, "w", newline="") as f:
                        f.write(spec["initial"])
                elif os.path.exists(path):
                    os.remove(path)
                cb = keras.callbacks.CSVLogger(
                    path, separator=spec.get("separator", ","),
                    append=spec.get("append", False))
                cb.path = path
            else:
                raise ValueError(f"{name}: unknown callback type {kind}")
            cb.set_model(model)
            callbacks.append((kind, cb))

        results = [{"per_epoch": []} for _ in callbacks]
        out = {"name": name}
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            for _, cb in callbacks:
                cb.on_train_begin()
            epoch = case.get("initial_epoch", 0)
            run = 0
            for e in case["epochs"]:
                logs = {k: log_value(v) for k, v in e.items()}
                set_marker(model, epoch)
                for (kind, cb), r in zip(callbacks, results):
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        kept = id(getattr(cb, "best_weights", None))
                        stopped = model.stop_training
                        model.stop_training = False
                        n_reduced = len(getattr(cb, "reduced", []))
                        n_saves = len(saves)
                        cb.on_epoch_end(epoch, logs)
                    missing = any("not available" in str(w.message) or
                                  "available." in str(w.message) or
                                  "Can save best model only with"
                                  in str(w.message) for w in caught)
                    if kind == "early_stopping":
                        r["per_epoch"].append({
                            "stop": bool(model.stop_training),
                            "keep": id(cb.best_weights) != kept,
                            "missing": missing,
                            "wait": cb.wait, "best": best(cb.best)})
                    elif kind == "reduce_lr_on_plateau":
                        r["per_epoch"].append({
                            "lr": repr(float(keras.ops.convert_to_numpy(
                                model.optimizer.learning_rate))),
                            "reduced": any(cb.reduced[n_reduced:]),
                            "missing": missing,
                            "wait": cb.wait,
                            "cooldown": cb.cooldown_counter,
                            "best": best(cb.best)})
                    elif kind == "checkpoint_best":
                        r["per_epoch"].append({"save": len(saves) > n_saves,
                                               "best": best(cb.best)})
                    model.stop_training = stopped or model.stop_training
                epoch += 1
                run += 1
                if model.stop_training:
                    break
            set_marker(model, -1)
            for (kind, cb), r in zip(callbacks, results):
                cb.on_train_end()
                r["type"] = kind
                if kind == "early_stopping":
                    restored = marker(model)
                    r["stopped_epoch"] = cb.stopped_epoch
                    r["best_epoch"] = cb.best_epoch
                    r["restore_epoch"] = (None if restored == -1
                                          else int(restored))
                    set_marker(model, -1)
                elif kind == "csv_logger":
                    r.clear()
                    r.update({"type": kind, "file": cb.path})
                if kind != "csv_logger":
                    r.setdefault("per_epoch", [])
        out["epochs_run"] = run
        out["callbacks"] = results
        out["messages"] = [line for line in stdout.getvalue().split("\n")
                           if line]
        return out


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def compare_case(case, ours, keras_result, keras_error):
    """The differences between our record and Keras', as lines."""
    name = case["name"]
    if "error" in case:
        problems = []
        if case["error"] not in ours.get("error", ""):
            problems.append(f"{name}: expected an error with "
                            f"{case['error']!r}, got {ours!r}")
        raises = case.get("keras_raises")
        if raises is not None and raises != (keras_error is not None):
            problems.append(f"{name}: the table says Keras "
                            f"{'raises' if raises else 'does not raise'}; "
                            f"it {'raised ' + keras_error if keras_error else 'did not'}")
        return problems
    if "error" in ours:
        return [f"{name}: ours failed: {ours['error']}"]
    if keras_error:
        return [f"{name}: Keras failed: {keras_error}"]
    problems = []
    for key in ("epochs_run", "messages"):
        if ours[key] != keras_result[key]:
            problems.append(f"{name}: {key}: ours {ours[key]!r}, "
                            f"Keras {keras_result[key]!r}")
    for i, (a, b) in enumerate(zip(ours["callbacks"],
                                   keras_result["callbacks"])):
        if a["type"] == "csv_logger":
            ta, tb = read_bytes(a["file"]), read_bytes(b["file"])
            if ta != tb:
                problems.append(f"{name}: callback {i} csv: ours {ta!r}, "
                                f"Keras {tb!r}")
            continue
        for key in sorted(set(a) | set(b)):
            if key == "per_epoch":
                for epoch, (pa, pb) in enumerate(zip(a[key], b[key])):
                    if pa != pb:
                        problems.append(f"{name}: callback {i} "
                                        f"({a['type']}) epoch {epoch}: ours "
                                        f"{pa}, Keras {pb}")
                if len(a[key]) != len(b[key]):
                    problems.append(f"{name}: callback {i}: "
                                    f"{len(a[key])} epochs, Keras "
                                    f"{len(b[key])}")
            elif a.get(key) != b.get(key):
                problems.append(f"{name}: callback {i} ({a['type']}) {key}: "
                                f"ours {a.get(key)!r}, Keras {b.get(key)!r}")
    return problems


def repr_bits():
    """Doubles to print: random bit patterns, ordinary magnitudes, and the
    edges of Python's positional range."""
    rng = random.Random(1234)
    values = [0.0, -0.0, 1.0, 0.1, 1e-4, 1e-5, 1e15, 1e16, 1e17, 5e-324,
              2.2250738585072014e-308, 1.7976931348623157e308, 0.5, 123.0,
              float("nan"), float("inf"), float("-inf"),
              9999999999999998.0, 1e16 - 2, 0.00009999999999999999,
              float(np.float32(0.001)), float(np.float32(0.1))]
    for p in range(-30, 30):
        v = 10.0 ** p
        values += [v, math.nextafter(v, 0), math.nextafter(v, math.inf), -v]
    for _ in range(3000):
        values.append(rng.random() * 10.0 ** rng.randint(-12, 20))
        values.append(float(np.float32(rng.random() * 10.0 **
                                       rng.randint(-8, 8))))
        values.append(float(rng.randint(-10**6, 10**6)))
    bits = [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]
    bits += [rng.getrandbits(64) for _ in range(5000)]
    return [format(b, "016x") for b in bits]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    with open(args.table) as f:
        table = json.load(f)
    cases = table["cases"]

    backend = keras.backend.backend()
    truth_directions = keras_directions()
    driver_input = {
        "precision": "float64" if backend == "numpy" else "float32",
        "repr_bits": repr_bits(),
        "direction_names": sorted(truth_directions),
        "cases": cases,
    }
    input_path = os.path.join(args.work, "input.json")
    with open(input_path, "w") as f:
        json.dump(driver_input, f)
    done = subprocess.run([args.driver, input_path, args.work],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{args.driver} failed ({done.returncode}):\n"
                 f"{done.stderr}")
    ours = json.loads(done.stdout)

    problems = []
    for b, text in zip(driver_input["repr_bits"], ours["repr"]):
        value = struct.unpack("<d", struct.pack("<Q", int(b, 16)))[0]
        if repr(value) != text:
            problems.append(f"repr of {b}: ours {text!r}, Python "
                            f"{repr(value)!r}")
    for name, direction in truth_directions.items():
        if ours["directions"].get(name, "absent") != direction:
            problems.append(f"direction of {name}: ours "
                            f"{ours['directions'].get(name)!r}, Keras "
                            f"{direction!r}")

    recorder = Recorder(args.work, {})
    names = set()
    for case, mine in zip(cases, ours["cases"]):
        assert case["name"] not in names, f"two cases named {case['name']}"
        names.add(case["name"])
        keras_result, keras_error = None, None
        try:
            keras_result = recorder.run(case)
        except Exception as e:  # what Keras raises is part of the record
            keras_error = f"{type(e).__name__}: {e}"
        problems += compare_case(case, mine, keras_result, keras_error)

    for p in problems:
        print(p)
    if problems:
        sys.exit(f"fit-callbacks-vs-keras: {len(problems)} difference(s)")
    print(f"fit-callbacks-vs-keras: {len(cases)} cases, "
          f"{len(driver_input['repr_bits'])} reprs and "
          f"{len(truth_directions)} metric directions agree "
          f"({backend} backend)")


if __name__ == "__main__":
    main()
