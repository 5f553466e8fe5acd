"""A graphrun run with fit's callbacks, against real Keras 3 on its own logs.

    fit_run_check.py --run DIR --early KW --reduce KW --split F

DIR holds what `graphrun --csv-log DIR/log.csv --tensorboard DIR/tb
--checkpoint-best filepath=DIR/best.weights.h5 --save-model DIR/m.keras`
wrote for a run on arrays:DIR/train.npz with --validation-split F. The CSV's
rows are the epochs' logs; Keras' ReduceLROnPlateau(KW) and EarlyStopping(KW)
are given them in turn, as fit() would, and must decide what the run did:
the learning rate of every epoch, the epoch it stopped after. TensorBoard's
scalars must be the CSV's values (float32), and the weights the run kept
(the lowest val_loss's, saved by ModelCheckpoint, and EarlyStopping's best,
which with a min_delta is the last epoch that improved by more) must give,
in Keras' evaluate on the validation split, their val_loss.
"""

import argparse
import csv
import os
import sys

import keras
import numpy as np
from tensorboard.backend.event_processing import event_accumulator


def kwargs_of(text):
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        out[key] = {"true": True, "false": False}.get(value.lower(), None)
        if out[key] is None:
            out[key] = float(value) if "." in value or "e" in value else int(value)
    return out


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--early", default="")
    ap.add_argument("--reduce", default="")
    ap.add_argument("--split", type=float, required=True)
    ap.add_argument("--tol", type=float, default=1e-5)
    # Steps an epoch, when --log-every divides it: batch_loss is checked.
    ap.add_argument("--steps-per-epoch", type=int, default=0)
    a = ap.parse_args()

    with open(os.path.join(a.run, "log.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    logs = [{k: float(v) for k, v in r.items() if k not in ("epoch",)}
            for r in rows]
    # Keras' epoch logs are its metrics' float32 results: CSVLogger writes
    # the repr of a float32 value as a Python float.
    for epoch, (row, logged) in enumerate(zip(rows, logs)):
        for key, value in logged.items():
            if float(np.float32(value)) != value or repr(value) != row[key]:
                fail(f"epoch {epoch}: {key} = {row[key]} is not a float32 "
                     f"value written as Python writes it")
    print("CSV: every value a float32, as Keras' logs are")

    # Keras' callbacks on a stand-in model whose optimizer holds the rate.
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(logs[0]["learning_rate"]), "mse",
                  metrics=["mae"])
    model.optimizer.build(model.trainable_variables)
    reduce = keras.callbacks.ReduceLROnPlateau(**kwargs_of(a.reduce))
    early = keras.callbacks.EarlyStopping(**kwargs_of(a.early))
    for cb in (reduce, early):
        cb.set_model(model)
        cb.on_train_begin()
    stopped = None
    for epoch, row in enumerate(logs):
        keras_logs = {k: v for k, v in row.items() if k != "learning_rate"}
        rate = float(np.asarray(model.optimizer.learning_rate))
        if np.float32(rate) != np.float32(row["learning_rate"]):
            fail(f"epoch {epoch}: the run trained at {row['learning_rate']!r}, "
                 f"Keras' ReduceLROnPlateau says {rate!r}")
        reduce.on_epoch_end(epoch, keras_logs)
        early.on_epoch_end(epoch, keras_logs)
        if model.stop_training:
            stopped = epoch
            break
    if stopped is not None and stopped != len(logs) - 1:
        fail(f"Keras' EarlyStopping stops after epoch {stopped}, the run ran "
             f"{len(logs)} epochs")
    if stopped is None and "--expect-stop" in sys.argv:
        fail("Keras' EarlyStopping does not stop on these logs")
    print(f"{len(logs)} epochs: Keras' ReduceLROnPlateau gives every epoch's "
          f"rate, EarlyStopping {'stops after epoch ' + str(stopped) if stopped is not None else 'does not stop'}")

    # TensorBoard: Keras' layout, the CSV's values.
    for sub, prefix in (("train", ""), ("validation", "val_")):
        acc = event_accumulator.EventAccumulator(os.path.join(a.run, "tb", sub))
        acc.Reload()
        tags = acc.Tags()["scalars"]
        for key in logs[0]:
            if (prefix and not key.startswith(prefix)) or (
                    not prefix and key.startswith("val_")):
                continue
            tag = "epoch_" + key[len(prefix):]
            if tag not in tags:
                fail(f"tb/{sub}: no {tag} (has {sorted(tags)})")
            events = acc.Scalars(tag)
            got = [(e.step, np.float32(e.value)) for e in events]
            want = [(e, np.float32(r[key])) for e, r in enumerate(logs)]
            if got != want:
                fail(f"tb/{sub} {tag}: {got[:3]}... != the CSV's {want[:3]}...")
    # Keras' batch_loss is the epoch's running mean: at an epoch's last
    # step (--log-every dividing the steps of an epoch), the epoch's loss.
    acc = event_accumulator.EventAccumulator(os.path.join(a.run, "tb", "train"))
    acc.Reload()
    ends = 0
    for e in acc.Scalars("batch_loss") if a.steps_per_epoch else []:
        epoch = e.step // a.steps_per_epoch
        if e.step % a.steps_per_epoch == 0 and epoch <= len(logs):
            want = np.float32(logs[epoch - 1]["loss"])
            if np.float32(e.value) != want:
                fail(f"tb/train batch_loss at step {e.step} (an epoch's end): "
                     f"{e.value} != the epoch's loss {want}")
            ends += 1
    if a.steps_per_epoch and ends == 0:
        fail("no batch_loss at an epoch's last step")
    print("TensorBoard: train/ and validation/ epoch scalars equal the CSV's")
    if a.steps_per_epoch:
        print(f"TensorBoard: batch_loss at {ends} epochs' last steps is the epoch's loss")

    # The kept weights: the best epoch's val_loss, in Keras' evaluate.
    data = np.load(os.path.join(a.run, "train.npz"))
    x, y = data["x"], data["y"]
    n_val = len(x) - int(len(x) * (1 - a.split))
    xv, yv = x[-n_val:], y[-n_val:]
    # ModelCheckpoint(save_best_only) keeps the lowest val_loss; the
    # weights EarlyStopping restores are those of its own best, which with
    # a min_delta is the last epoch that improved by more than it (the
    # replayed callback's `best`).
    lowest = min(r["val_loss"] for r in logs)
    kept = keras.models.load_model(os.path.join(a.run, "m.keras"))
    for name, m, best in (("m.keras", kept, float(early.best)),
                          ("best.weights.h5", None, lowest)):
        if m is None:
            m = keras.models.load_model(os.path.join(a.run, "m.keras"))
            m.load_weights(os.path.join(a.run, "best.weights.h5"))
        got = m.evaluate(xv, yv, batch_size=1000, verbose=0, return_dict=True)
        if abs(got["loss"] - best) > a.tol * max(1.0, best):
            fail(f"{name}: Keras' val_loss {got['loss']!r}, the best epoch's "
                 f"{best!r}")
    print(f"the kept weights (m.keras, best.weights.h5) give the best "
          f"val_loss in Keras' evaluate")
    print("ok")


if __name__ == "__main__":
    main()
