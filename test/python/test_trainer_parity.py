"""What a Keras user sees across fit calls and from files, against real
Keras: each fit's shuffle, the callbacks under initial_epoch, the state
callback objects keep (the job's own), devices="gpu", a file's outputs,
and the rate
graphc.compile's learning_rate= trains at."""

import json

import keras
import numpy as np
import pytest

import graphc
from graphc import trainer as trainer_module


def _regression_data():
    """22 examples of 8 features and 3 targets, and 7 of validation on
    which the small model below does worse every epoch (a val_loss that
    rises: no epoch after the first is the best)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(22, 8)).astype(np.float32)
    y = rng.normal(size=(22, 3)).astype(np.float32)
    rng = np.random.default_rng(5)
    xv = rng.normal(size=(7, 8)).astype(np.float32)
    yv = rng.normal(size=(7, 3)).astype(np.float32)
    return x, y, xv, yv


def _regression_model():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((8,)),
        keras.layers.Dense(6, activation="tanh", name="hidden"),
        keras.layers.Dense(3, name="out")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def _holder():
    """A model for Keras' callbacks to replay on graphc's logs with."""
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.stop_training = False
    return model


# --- shuffle -------------------------------------------------------------

def _identity_trainer(seed):
    model = keras.Sequential([
        keras.Input((22,)),
        keras.layers.Dense(1, use_bias=False, kernel_initializer="ones",
                           name="d")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return graphc.compile(model, batch_size=4, devices="cpu:1", seed=seed)


def _short_batches(trainer, fits):
    """Each fit(epochs=1)'s short last batch. Every example is its own
    one-hot input with target 0, so a step scales its weight by
    1 - 0.2 / b, b the examples of its batch: the two of the epoch's last
    batch (22 = 5 * 4 + 2) by 0.9, the others by 0.95."""
    x = np.eye(22, dtype=np.float32)
    y = np.zeros((22, 1), np.float32)
    before = np.ones(22)
    batches = []
    for _ in range(fits):
        trainer.fit(x, y, epochs=1, verbose=0)
        after = trainer.get_weights()["d/kernel"].ravel()
        batches.append(tuple(np.flatnonzero(np.isclose(after / before, 0.9))))
        before = after
    return batches


def test_each_fit_shuffles_in_a_new_order_that_the_seed_repeats():
    # Keras' fit draws a new order every epoch, a second fit's included;
    # graphc's job draws each epoch's from its seed and the epoch's number
    # in the job, which every fit starts at 0: each fit now has a seed of
    # its own, drawn from the trainer's.
    batches = _short_batches(_identity_trainer(seed=0), 4)
    assert all(len(b) == 2 for b in batches)
    assert len(set(batches)) > 1, batches
    # The same calls with the same seed: the same orders.
    assert _short_batches(_identity_trainer(seed=0), 4) == batches
    assert _short_batches(_identity_trainer(seed=1), 4) != batches


# --- initial_epoch -------------------------------------------------------

def test_callbacks_number_epochs_from_initial_epoch(tmp_path):
    x, y, _, _ = _regression_data()
    trainer = graphc.compile(_regression_model(), batch_size=4,
                             devices="cpu:1")
    ours = tmp_path / "ours.csv"
    history = trainer.fit(x, y, epochs=5, initial_epoch=2, shuffle=False,
                          verbose=0,
                          callbacks=[keras.callbacks.CSVLogger(str(ours))])
    assert history.epoch == [2, 3, 4]
    # Keras' CSVLogger, given the same epochs and logs, writes the file
    # graphc wrote.
    theirs = tmp_path / "theirs.csv"
    replay = keras.callbacks.CSVLogger(str(theirs))
    replay.set_model(_holder())
    replay.on_train_begin()
    for i, epoch in enumerate(history.epoch):
        replay.on_epoch_end(epoch, {k: v[i] for k, v in
                                    history.history.items()})
    replay.on_train_end()
    assert ours.read_bytes() == theirs.read_bytes()

    # EarlyStopping's start_from_epoch counts initial_epoch in, as Keras'
    # epochs do: nothing improves by 10, so it stops at the second epoch it
    # watches, 4 (the job's own epochs, from 0, would watch from 3 on).
    def stop():
        return keras.callbacks.EarlyStopping(monitor="loss", min_delta=10.0,
                                             patience=0, start_from_epoch=3)
    given = stop()
    history = trainer.fit(x, y, epochs=8, initial_epoch=3, shuffle=False,
                          verbose=0, callbacks=[given])
    replay = stop()
    replay.set_model(_holder())
    replay.on_train_begin()
    for i, epoch in enumerate(history.epoch):
        assert not replay.model.stop_training
        replay.on_epoch_end(epoch, {"loss": history.history["loss"][i]})
    assert replay.model.stop_training and history.stopped_early
    assert history.epoch == [3, 4]
    assert (given.stopped_epoch, given.best_epoch) == (
        replay.stopped_epoch, replay.best_epoch) == (4, 3)

    # ModelCheckpoint's {epoch} counts from initial_epoch too, as Keras':
    # a resumed fit's files take new names, not the first fit's (the loss
    # falls every epoch: each is the best so far).
    for initial in (0, 2):
        trainer.fit(x, y, epochs=initial + 2, initial_epoch=initial,
                    shuffle=False, verbose=0, callbacks=[
                        keras.callbacks.ModelCheckpoint(
                            str(tmp_path / "m-{epoch:02d}.keras"),
                            monitor="loss", save_best_only=True)])
    assert sorted(p.name for p in tmp_path.glob("m-*.keras")) == [
        "m-01.keras", "m-02.keras", "m-03.keras", "m-04.keras"]


# --- the callbacks' state -------------------------------------------------

def test_a_checkpoint_keeps_its_best_across_fits_as_keras_does(tmp_path):
    # Keras' ModelCheckpoint never resets `best`: one object given to two
    # fits saves in the second only what beats the first's best. Here
    # val_loss rises every epoch, so the file stays the first epoch's.
    x, y, xv, yv = _regression_data()
    trainer = graphc.compile(_regression_model(), batch_size=4,
                             devices="cpu:1")
    path = tmp_path / "best.keras"
    given = keras.callbacks.ModelCheckpoint(str(path), save_best_only=True)
    replay = keras.callbacks.ModelCheckpoint(str(tmp_path / "replay.keras"),
                                             save_best_only=True)
    replay.set_model(_holder())
    replay.on_train_begin()
    for _ in range(2):
        history = trainer.fit(x, y, epochs=2, shuffle=False, verbose=0,
                              validation_data=(xv, yv), callbacks=[given])
        for i in range(2):
            replay.on_epoch_end(i, {k: v[i] for k, v in
                                    history.history.items()})
        assert given.best == replay.best
    assert history.history["val_loss"][-1] > given.best
    saved = keras.saving.load_model(str(path))
    # The first fit's first epoch: 6 steps (22 examples in batches of 4).
    assert int(saved.optimizer.iterations) == 6
    assert abs(saved.evaluate(xv, yv, batch_size=4, verbose=0)
               - given.best) < 1e-5


def test_early_stopping_holds_keras_state_after_fit():
    x, y, xv, yv = _regression_data()

    def stop(module):
        return module.EarlyStopping(patience=1, restore_best_weights=True)
    for given in (stop(keras.callbacks), stop(graphc.callbacks)):
        trainer = graphc.compile(_regression_model(), batch_size=4,
                                 devices="cpu:1")
        history = trainer.fit(x, y, epochs=6, shuffle=False, verbose=0,
                              validation_data=(xv, yv), callbacks=[given])
        replay = stop(keras.callbacks)
        replay.set_model(_regression_model())
        replay.model.stop_training = False
        replay.on_train_begin()
        for i in history.epoch:
            assert not replay.model.stop_training
            replay.on_epoch_end(i, {k: v[i] for k, v in
                                    history.history.items()})
        assert replay.model.stop_training
        for key in ("stopped_epoch", "best", "best_epoch", "wait"):
            assert getattr(given, key) == getattr(replay, key), key
        assert given.stopped_epoch == history.epoch[-1] > 0


# --- devices="gpu" -------------------------------------------------------

def test_gpu_devices_take_every_gpu_or_say_there_is_none():
    # "gpu" (every GPU) sent the cuda backend without a count, which the
    # job refused ("use --gpus N") even where GPUs were; it now takes every
    # GPU there is, and says so where there is none.
    devices = trainer_module._devices
    assert devices("gpu") == devices("gpu:0") == ({"backend": "cuda"}, None)
    assert devices("gpu:2") == ({"gpus": 2, "backend": "cuda"}, 2)
    if _graphc_gpus() == 0:
        x, y, _, _ = _regression_data()
        with pytest.raises(graphc.DeviceError, match="no CUDA GPU"):
            graphc.compile(_regression_model(), batch_size=4,
                           devices="gpu").evaluate(x, y)


def _graphc_gpus():
    """The GPUs this machine has, as nvidia-smi counts them (0 without)."""
    import shutil
    import subprocess
    if not shutil.which("nvidia-smi"):
        return 0
    run = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return run.stdout.count("GPU ") if run.returncode == 0 else 0


# --- a file's outputs ----------------------------------------------------

def test_a_keras_file_predicts_in_keras_shapes_and_structure(tmp_path):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    sequential = keras.Sequential([keras.Input((8,)), keras.layers.Dense(6),
                                   keras.layers.Reshape((3, 2))])
    sequential.compile(optimizer="sgd", loss="mse")
    inputs = keras.Input((8,), name="inp")
    h = keras.layers.Dense(6, activation="tanh")(inputs)
    two = keras.Model(inputs, {
        "b": keras.layers.Dense(2, name="b")(h),
        "a": keras.layers.Reshape((2, 3), name="a")(h)})
    two.compile(optimizer="sgd", loss={"a": "mse", "b": "mse"})
    for name, model in (("sequential", sequential), ("two", two)):
        path = str(tmp_path / f"{name}.keras")
        model.save(path)
        ours = graphc.compile(path, batch_size=4, devices="cpu:1").predict(x)
        theirs = model.predict(x, verbose=0)
        if isinstance(theirs, dict):
            assert isinstance(ours, dict) and sorted(ours) == sorted(theirs)
            pairs = [(ours[k], theirs[k]) for k in theirs]
        else:
            pairs = [(ours, theirs)]
        for a, b in pairs:
            assert a.shape == b.shape
            assert np.max(np.abs(a - b)) < 1e-5
    # A .json file (the architecture alone) too.
    path = tmp_path / "sequential.json"
    config = json.loads(sequential.to_json())
    config["compile_config"] = sequential.get_compile_config()
    path.write_text(json.dumps(config))
    out = graphc.compile(str(path), batch_size=4, devices="cpu:1").predict(x)
    assert out.shape == (5, 3, 2)


# --- graphc.compile's learning_rate= -------------------------------------

def test_compile_s_learning_rate_is_the_one_saved(tmp_path):
    # The trainer trains at 0.03, not the model's 0.1: the optimizer
    # to_keras sets and save writes has that rate, so that Keras goes on
    # from the file as the trainer does.
    x, y, _, _ = _regression_data()

    def model():
        keras.utils.set_random_seed(1)
        m = keras.Sequential([keras.Input((8,)),
                               keras.layers.Dense(3, name="out")])
        m.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
                  loss="mse")
        return m
    trainer = graphc.compile(model(), batch_size=4, devices="cpu:1",
                             learning_rate=0.03)
    trainer.fit(x, y, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "m.keras")
    trainer.save(path)
    loaded = keras.saving.load_model(path)
    assert float(loaded.optimizer.learning_rate) == np.float32(0.03)
    assert int(loaded.optimizer.iterations) == trainer.step == 6
    assert float(trainer.to_keras(model()).optimizer.learning_rate) == \
        np.float32(0.03)


# --- History -------------------------------------------------------------

def test_history_holds_keras_params_and_model():
    # Keras' CallbackList gives History verbose, epochs and steps (the
    # batches of an epoch: the training rows after validation_split's
    # floor(N (1 - split)), Keras' train_validation_split), and the model.
    x, y, _, _ = _regression_data()
    model = _regression_model()
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    history = trainer.fit(x, y, epochs=3, validation_split=0.2, verbose=0)
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 5}
    assert history.model is model
    history = trainer.fit(x, y, epochs=4, initial_epoch=3, verbose=0)
    assert history.params == {"verbose": 0, "epochs": 4, "steps": 6}
    assert history.epoch == [3]


# --- a fresh optimizer's state -------------------------------------------

def test_a_fresh_optimizer_with_state_besides_slots_is_not_warned_of(capfd):
    # use_ema (or gradient accumulation, loss scaling) keeps state the
    # job does not load from a Keras file; an optimizer that never stepped
    # (iterations 0) has none to lose, so fit said nothing of it then.
    x, y, _, _ = _regression_data()
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.SGD(0.1, use_ema=True),
                  loss="mse")
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    trainer.fit(x, y, epochs=1, verbose=0)
    out, err = capfd.readouterr()
    assert "not loaded" not in out + err
