"""graphc.compile / fit / evaluate / predict / to_keras against real Keras."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import keras
import numpy as np
import pytest

import graphc
from conftest import cnn, mlp


@pytest.fixture(scope="module")
def flat(fashion):
    x_train, y_train, x_test, y_test = fashion
    return (x_train.reshape(-1, 784), y_train, x_test.reshape(-1, 784), y_test)


@pytest.fixture(scope="module")
def trained(flat):
    """The guide's MLP, 2 epochs on 2 CPU replicas, 1/6 held out."""
    x_train, y_train, _, _ = flat
    keras.utils.set_random_seed(1)
    model = mlp(keras)
    trainer = graphc.compile(model, batch_size=256, devices="cpu:2")
    history = trainer.fit(x_train, y_train, epochs=2, validation_split=0.1667,
                          verbose=0)
    return model, trainer, history


def test_fit_reaches_the_accuracy_keras_does(trained, flat):
    _, trainer, history = trained
    _, _, x_test, y_test = flat
    assert history.epoch == [0, 1]
    assert set(history.history) >= {"loss", "accuracy", "val_loss",
                                     "val_accuracy"}
    assert history.history["loss"][1] < history.history["loss"][0]
    result = trainer.evaluate(x_test, y_test)
    assert set(result) == {"loss", "accuracy"}
    assert result["accuracy"] >= 0.85
    # 60000 * (1 - 0.1667) examples, 2 epochs of batches of 256, each
    # epoch's last short, as Keras ends an epoch.
    assert trainer.step == 2 * -(-int(60000 * (1 - 0.1667)) // 256)
    assert history.timing["examples_per_second"] > 0


def test_to_keras_then_keras_evaluate_agrees(trained, flat):
    model, trainer, _ = trained
    _, _, x_test, y_test = flat
    ours = trainer.evaluate(x_test, y_test)
    trainer.to_keras(model)
    theirs = model.evaluate(x_test, y_test, batch_size=256, verbose=0,
                            return_dict=True)
    assert abs(ours["loss"] - theirs["loss"]) < 1e-5
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 1e-5


def test_predict_agrees_with_keras_predict(trained, flat):
    model, trainer, _ = trained
    _, _, x_test, _ = flat
    trainer.to_keras(model)
    ours = trainer.predict(x_test[:1000])
    theirs = model.predict(x_test[:1000], batch_size=256, verbose=0)
    assert ours.shape == theirs.shape == (1000, 10)
    assert np.max(np.abs(ours - theirs)) < 1e-5


def test_a_second_fit_goes_on(flat):
    x_train, y_train, x_test, y_test = flat
    keras.utils.set_random_seed(2)
    trainer = graphc.compile(mlp(keras), batch_size=500, devices="cpu")
    trainer.fit(x_train[:5000], y_train[:5000], epochs=1, verbose=0)
    first = trainer.evaluate(x_test, y_test)["loss"]
    assert trainer.step == 10
    history = trainer.fit(x_train[5000:10000], y_train[5000:10000], epochs=2,
                          verbose=0)
    # Keras numbers a second fit's epochs from 0 again (initial_epoch=0).
    assert history.epoch == [0, 1]
    assert trainer.step == 30
    assert trainer.evaluate(x_test, y_test)["loss"] < first


def test_the_model_s_own_initial_weights_are_the_trainer_s(flat):
    _, _, x_test, _ = flat
    model = mlp(keras)
    trainer = graphc.compile(model, batch_size=250, devices="cpu")
    ours = trainer.predict(x_test[:500])
    theirs = model.predict(x_test[:500], verbose=0)
    assert np.max(np.abs(ours - theirs)) < 1e-5


def test_compile_a_keras_file(tmp_path, fashion):
    x_train, y_train, x_test, y_test = fashion
    keras.utils.set_random_seed(3)
    model = cnn(keras)
    path = str(tmp_path / "cnn.keras")
    model.save(path)
    trainer = graphc.compile(path, batch_size=200, devices="cpu:2")
    # Its weights are the file's.
    before = trainer.predict(x_test[:400])
    assert np.max(np.abs(before - model.predict(x_test[:400], verbose=0))) < 1e-5
    trainer.fit(x_train[:6000], y_train[:6000], epochs=1, verbose=0)
    out = str(tmp_path / "trained.keras")
    trainer.save(out)
    loaded = keras.saving.load_model(out)
    theirs = loaded.evaluate(x_test, y_test, batch_size=200, verbose=0,
                             return_dict=True)
    ours = trainer.evaluate(x_test, y_test)
    assert abs(ours["loss"] - theirs["loss"]) < 1e-5
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 1e-5


def test_early_stopping_decides_as_keras_does(flat):
    x_train, y_train, _, _ = flat
    trainer = graphc.compile(mlp(keras), batch_size=500, devices="cpu")
    # Keras' own callback object: graphc reads its arguments back.
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=0,
                                         min_delta=0.05)
    history = trainer.fit(x_train[:6000], y_train[:6000], epochs=8,
                          validation_split=0.2, callbacks=[stop], verbose=0)
    # Keras' EarlyStopping, replayed on our logs, stops where we did.
    replay = keras.callbacks.EarlyStopping(monitor="val_loss", patience=0,
                                           min_delta=0.05)
    holder = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    replay.set_model(holder)
    holder.stop_training = False
    replay.on_train_begin()
    epochs = 0
    for epoch in range(8):
        epochs += 1
        replay.on_epoch_end(epoch, {k: v[epoch] for k, v in
                                    history.history.items()
                                    if epoch < len(v)})
        if holder.stop_training:
            break
    assert len(history.epoch) == epochs
    assert history.stopped_early == (epochs < 8)


def test_a_reduced_learning_rate_carries_into_the_next_fit():
    # Keras' ReduceLROnPlateau assigns optimizer.learning_rate, which the
    # next fit trains at. Keras' own callback, replayed on our logs, says
    # what the rate is after the first fit; a trainer compiled at that rate
    # from the same weights trains the second fit identically.
    rng = np.random.default_rng(14)
    x = rng.normal(size=(22, 8)).astype(np.float32)
    y = rng.normal(size=(22, 3)).astype(np.float32)

    def model():
        keras.utils.set_random_seed(15)
        m = keras.Sequential([keras.Input((8,)),
                              keras.layers.Dense(6, activation="tanh",
                                                 name="hidden"),
                              keras.layers.Dense(3, name="out")])
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        return m

    def plateau():
        return keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5,
                                                 patience=0, min_delta=10.0)

    first = model()
    trainer = graphc.compile(first, batch_size=4, devices="cpu:1")
    history = trainer.fit(x, y, epochs=2, shuffle=False, verbose=0,
                          callbacks=[plateau()])
    replay, holder = plateau(), model()
    replay.set_model(holder)
    replay.on_train_begin()
    for epoch in range(2):
        replay.on_epoch_end(epoch, {"loss": history.history["loss"][epoch]})
    rate = float(holder.optimizer.learning_rate)
    assert abs(rate - 0.05) < 1e-8
    second = model()
    trainer.to_keras(second)
    again = graphc.compile(second, batch_size=4, devices="cpu:1",
                           learning_rate=rate)
    trainer.fit(x, y, epochs=1, shuffle=False, verbose=0)
    again.fit(x, y, epochs=1, shuffle=False, verbose=0)
    for name, value in again.get_weights().items():
        assert np.max(np.abs(trainer.get_weights()[name] - value)) < 1e-7


def test_checkpoint_filepath_fields_and_unsupported_callback_options(
        tmp_path):
    # Keras formats ModelCheckpoint's filepath with the epoch and its logs;
    # options graphc would not honour are refused, not left out.
    rng = np.random.default_rng(16)
    x = rng.normal(size=(22, 8)).astype(np.float32)
    y = rng.normal(size=(22, 3)).astype(np.float32)
    keras.utils.set_random_seed(17)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    pattern = str(tmp_path / "m-{epoch:02d}-{val_loss:.3f}.weights.h5")
    history = trainer.fit(
        x, y, epochs=2, verbose=0, shuffle=False, validation_data=(x, y),
        callbacks=[keras.callbacks.ModelCheckpoint(
            pattern, save_best_only=True, save_weights_only=True)])
    # Every epoch improves here (a small step down a quadratic), so each
    # saves under its own name.
    val = history.history["val_loss"]
    assert val[1] < val[0]
    expected = sorted(pattern.format(epoch=e + 1, val_loss=v).split("/")[-1]
                      for e, v in enumerate(val))
    assert sorted(os.listdir(tmp_path)) == expected
    for callback in (keras.callbacks.TensorBoard(str(tmp_path / "tb"),
                                                 histogram_freq=1),
                     keras.callbacks.TensorBoard(str(tmp_path / "tb"),
                                                 update_freq="batch"),
                     keras.callbacks.ModelCheckpoint(
                         str(tmp_path / "m.keras"), save_freq=2)):
        with pytest.raises(graphc.UnsupportedError):
            trainer.fit(x, y, epochs=1, verbose=0, callbacks=[callback])


def test_validation_data_overrides_validation_split_as_in_keras():
    # Keras' fit splits only when validation_data is None: given both, it
    # trains on every example and validates on validation_data.
    rng = np.random.default_rng(21)
    x = rng.normal(size=(24, 8)).astype(np.float32)
    y = rng.normal(size=(24, 3)).astype(np.float32)
    xv = rng.normal(size=(8, 8)).astype(np.float32)
    yv = rng.normal(size=(8, 3)).astype(np.float32)
    keras.utils.set_random_seed(22)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    runs = []
    for split in (0.25, 0.0):
        trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
        history = trainer.fit(x, y, epochs=2, verbose=0, shuffle=False,
                              validation_split=split, validation_data=(xv, yv))
        runs.append((history.history, trainer.step, trainer.get_weights()))
    (with_split, steps, weights), (without, steps0, weights0) = runs
    assert steps == steps0 == 12  # 24 examples of 4, twice: none held out
    assert with_split == without
    for a, b in zip(weights, weights0):
        np.testing.assert_array_equal(a, b)


def test_ctrl_c_stops_at_a_step_and_the_trainer_stays_usable(flat):
    x_train, y_train, x_test, y_test = flat
    trainer = graphc.compile(mlp(keras), batch_size=100, devices="cpu")
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match="stopped at step"):
        trainer.fit(x_train, y_train, epochs=100, verbose=0)
    timer.join()
    assert time.monotonic() - started < 30
    step = trainer.step
    assert 0 < step < 100 * 600
    # Python's handler is back (at the C level too: a SIGINT now raises
    # KeyboardInterrupt in Python), and the trainer goes on from that step.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    trainer.fit(x_train[:1000], y_train[:1000], epochs=1, verbose=0)
    assert trainer.step == step + 10
    assert trainer.evaluate(x_test, y_test)["accuracy"] > 0.5


def _threads():
    """{thread id: (name, blocked-signal mask)} of this process, from /proc."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/status") as f:
                blocked = next(int(line.split()[1], 16) for line in f
                               if line.startswith("SigBlk:"))
        except (OSError, StopIteration):
            continue  # a thread that ended meanwhile
        out[int(tid)] = (name, blocked)
    return out


def test_ctrl_c_during_evaluate_runs_pythons_handler_off_the_computing_thread(
        flat):
    # oneDNN 2.6's JIT GEMM kernels point rsp into the heap while they run:
    # a signal frame written on the thread that computes corrupts it. An
    # evaluation has no preemption signals of its own, so Python's SIGINT
    # handler stays; the job routes it to its graph-signals thread.
    _, _, x_test, y_test = flat
    trainer = graphc.compile(mlp(keras), batch_size=100, devices="cpu")
    x, y = np.tile(x_test, (6, 1)), np.tile(y_test, 6)
    main = threading.get_native_id()
    sigint = 1 << (signal.SIGINT - 1)
    seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            threads = _threads()
            if any(name == "graph-signals" for name, _ in threads.values()):
                seen.append(threads[main][1])
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        # Python raises the KeyboardInterrupt once the job is back.
        with pytest.raises(KeyboardInterrupt):
            for _ in range(10):
                trainer.evaluate(x, y)
                time.sleep(0.2)
    finally:
        done.set()
        watcher.join()
    assert seen, "no graph-signals thread while evaluate ran"
    assert seen[0] & sigint, "the thread that computes takes SIGINT"
    after = _threads()
    assert not after[main][1] & sigint
    assert "graph-signals" not in {name for name, _ in after.values()}
    assert trainer.evaluate(x_test, y_test)["loss"] > 0


def test_bad_arrays_are_refused_naming_them(flat):
    x_train, y_train, _, _ = flat
    trainer = graphc.compile(mlp(keras), batch_size=100, devices="cpu")
    with pytest.raises(graphc.InvalidDataError, match=r"\(N, 784\)"):
        trainer.fit(x_train.reshape(-1, 28, 28)[:1000], y_train[:1000],
                    verbose=0)
    with pytest.raises(graphc.InvalidDataError, match="dtype complex64"):
        trainer.fit(x_train[:1000].astype(np.complex64), y_train[:1000],
                    verbose=0)
    with pytest.raises(graphc.InvalidDataError, match="1000 examples, y 999"):
        trainer.fit(x_train[:1000], y_train[:999], verbose=0)
    with pytest.raises(graphc.InvalidDataError, match="label 10 is not below"):
        trainer.fit(x_train[:1000], np.full(1000, 10), verbose=0)
    with pytest.raises(graphc.InvalidDataError, match="validation_split"):
        trainer.fit(x_train[:1000], y_train[:1000], validation_split=1.5,
                    verbose=0)


def test_an_unsupported_layer_is_named(flat):
    model = keras.Sequential([keras.Input((10, 4)), keras.layers.LSTM(8),
                              keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    with pytest.raises(graphc.InvalidModelError,
                       match="unsupported layer class 'LSTM'"):
        graphc.compile(model)


def test_an_uncompiled_model_is_refused():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    with pytest.raises(graphc.InvalidModelError, match="not compiled"):
        graphc.compile(model)


def test_a_functional_model_of_two_inputs_takes_a_dict(flat):
    x_train, y_train, x_test, y_test = flat
    rng = np.random.default_rng(5)
    # The second input carries a noisy copy of the label: the model must
    # read both inputs, each from its own array, to fit as Keras does.
    def extra(y):
        return (np.eye(10)[y] + rng.normal(0, 0.5, (len(y), 10))).astype(
            np.float32)
    e_train, e_test = extra(y_train[:12000]), extra(y_test)
    keras.utils.set_random_seed(6)
    pixels = keras.Input((784,), name="pixels")
    hint = keras.Input((10,), name="hint")
    h = keras.layers.Dense(64, activation="relu")(pixels)
    h = keras.layers.Concatenate()([h, keras.layers.Dense(16)(hint)])
    out = keras.layers.Dense(10, activation="softmax")(h)
    model = keras.Model([pixels, hint], out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    trainer = graphc.compile(model, batch_size=200, devices="cpu:2")
    trainer.fit({"hint": e_train, "pixels": x_train[:12000]}, y_train[:12000],
                epochs=2, verbose=0)
    test = {"pixels": x_test, "hint": e_test}
    ours = trainer.evaluate(test, y_test)
    trainer.to_keras(model)
    theirs = model.evaluate(test, y_test, batch_size=200, verbose=0,
                            return_dict=True)
    assert abs(ours["loss"] - theirs["loss"]) < 1e-5
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 1e-5
    # The hint is read: without it the same weights do clearly worse.
    blind = trainer.evaluate({"pixels": x_test, "hint": 0 * e_test}, y_test)
    assert ours["accuracy"] > 0.8 and ours["accuracy"] > blind["accuracy"] + 0.05
    assert np.max(np.abs(trainer.predict(test)[:500] -
                         model.predict({k: v[:500] for k, v in test.items()},
                                       verbose=0))) < 1e-5
    with pytest.raises(graphc.InvalidDataError, match="'hint'"):
        trainer.evaluate({"pixels": x_test}, y_test)


def test_unnamed_inputs_take_a_list_or_either_name():
    # keras.Input() without a name: its InputLayer ("input_layer_1", the
    # plan's input) and its tensor ("keras_tensor_5") are named apart.
    # Keras 3.15 takes such a model's inputs as a list (a dict under either
    # name fails one of its two checks); graphc takes the list, and a dict
    # under either name.
    keras.utils.set_random_seed(7)
    a, b = keras.Input((4,)), keras.Input((3,))
    out = keras.layers.Dense(2)(keras.layers.Concatenate()([a, b]))
    model = keras.Model([a, b], out)
    model.compile(optimizer="sgd", loss="mse")
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    rng = np.random.default_rng(8)
    xa = rng.normal(size=(8, 4)).astype(np.float32)
    xb = rng.normal(size=(8, 3)).astype(np.float32)
    theirs = model.predict([xa, xb], verbose=0)
    layers = [name for name, _, _ in
              json.loads(model.to_json())["config"]["input_layers"]]
    by_layer = dict(zip(layers, (xa, xb)))
    by_tensor = {t.name: x for t, x in zip(model.inputs, (xa, xb))}
    assert not set(by_layer) & set(by_tensor)
    for x in ([xa, xb], by_layer, by_tensor):
        assert np.max(np.abs(trainer.predict(x) - theirs)) < 1e-6
    with pytest.raises(graphc.InvalidDataError, match="given twice"):
        trainer.predict({**by_layer, model.inputs[0].name: xa})
    y = rng.normal(size=(8, 2)).astype(np.float32)
    ours = trainer.evaluate([xa, xb], y)
    assert abs(ours["loss"] - model.evaluate([xa, xb], y, batch_size=4,
                                             verbose=0)) < 1e-6


def test_loss_options_keras_leaves_out_of_its_config_are_read():
    # Keras 3's Huber and CosineSimilarity drop delta and axis from their
    # get_config(); the live loss objects still hold them.
    rng = np.random.default_rng(9)
    x = rng.normal(size=(22, 5)).astype(np.float32)
    y = (3 * rng.normal(size=(22, 2))).astype(np.float32)
    for delta in (0.3, 5.0):
        keras.utils.set_random_seed(10)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss=keras.losses.Huber(delta=delta))
        assert "delta" not in model.get_compile_config()["loss"]["config"]
        trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
        theirs = model.evaluate(x, y, batch_size=4, verbose=0)
        assert abs(trainer.evaluate(x, y)["loss"] - theirs) < 1e-6 * theirs
    model.compile(optimizer="sgd", loss=keras.losses.CosineSimilarity(axis=0))
    with pytest.raises(graphc.InvalidModelError, match="axis"):
        graphc.compile(model, batch_size=4, devices="cpu:1")


def test_a_learning_rate_of_zero_leaves_the_weights_as_keras_does():
    # Keras takes learning_rate=0: every update, weight decay and momentum
    # included, is then 0, so the loss stays that of the initial weights.
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    y = rng.normal(size=(40, 2)).astype(np.float32)
    for optimizer in (keras.optimizers.SGD(0.0, momentum=0.9),
                      keras.optimizers.AdamW(0.0, weight_decay=0.1)):
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2)])
        model.compile(optimizer=optimizer, loss="mse")
        before = model.get_weights()
        theirs = model.evaluate(x, y, batch_size=8, verbose=0)
        trainer = graphc.compile(model, batch_size=8, devices="cpu:1")
        history = trainer.fit(x, y, epochs=2, verbose=0)
        np.testing.assert_allclose(history.history["loss"], [theirs] * 2,
                                   rtol=1e-6)
        trainer.to_keras(model)
        for b, a in zip(before, model.get_weights()):
            np.testing.assert_array_equal(a, b)


def test_a_loss_axis_naming_the_last_is_taken_and_another_refused():
    # axis=1 of a rank-2 output is Keras' default -1; of a rank-3 output it
    # is not the class axis, which graphc refuses by the axis.
    rng = np.random.default_rng(5)
    x = rng.normal(size=(24, 6)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 24)]
    for loss in (keras.losses.CategoricalCrossentropy(axis=1),
                 keras.losses.BinaryCrossentropy(axis=1, from_logits=True)):
        keras.utils.set_random_seed(6)
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])
        model.compile(optimizer="sgd", loss=loss)
        trainer = graphc.compile(model, batch_size=8, devices="cpu:1")
        theirs = model.evaluate(x, y, batch_size=8, verbose=0)
        assert abs(trainer.evaluate(x, y)["loss"] - theirs) < 1e-6 * theirs
    model = keras.Sequential([keras.Input((4, 6)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd",
                  loss=keras.losses.CategoricalCrossentropy(axis=1))
    with pytest.raises(graphc.InvalidModelError,
                       match="loss axis 1 is not the last axis of the rank-3"):
        graphc.compile(model, batch_size=8, devices="cpu:1")


def test_an_adapted_normalization_comes_back_to_keras(tmp_path):
    # Normalization.adapt() adds an int32 'count' that no step uses: the
    # plan has no such variable, and to_keras and save keep Keras' own.
    rng = np.random.default_rng(11)
    x = rng.normal(3.0, 2.0, size=(16, 6)).astype(np.float32)
    y = rng.normal(size=(16, 2)).astype(np.float32)
    norm = keras.layers.Normalization()
    norm.adapt(x)
    model = keras.Sequential([keras.Input((6,)), norm, keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    count = int(norm.count.numpy())
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    trainer.fit(x, y, epochs=2, verbose=0)
    ours = trainer.predict(x)
    trainer.to_keras(model)
    assert int(norm.count.numpy()) == count
    assert np.max(np.abs(model.predict(x, verbose=0) - ours)) < 1e-5
    trainer.save(tmp_path / "n.keras")
    loaded = keras.saving.load_model(tmp_path / "n.keras")
    assert np.max(np.abs(loaded.predict(x, verbose=0) - ours)) < 1e-5


def test_a_dict_of_outputs_is_named_by_its_keys():
    # keras.Model(x, {"zscore": a, "prob": b}): Keras names the outputs by
    # the keys (sorted), not by their layers, in y, the logs and predict.
    keras.utils.set_random_seed(12)
    x_in = keras.Input((8,), name="x")
    h = keras.layers.Dense(6, activation="tanh")(x_in)
    outputs = {"zscore": keras.layers.Dense(2, name="dense_a")(h),
               "prob": keras.layers.Dense(1, activation="sigmoid",
                                          name="dense_b")(h)}
    model = keras.Model(x_in, outputs)
    model.compile(optimizer="sgd",
                  loss={"zscore": "mse", "prob": "binary_crossentropy"},
                  loss_weights={"zscore": 1.0, "prob": 0.5},
                  metrics={"prob": ["accuracy"]})
    rng = np.random.default_rng(13)
    x = rng.random((22, 8)).astype(np.float32)
    y = {"zscore": rng.random((22, 2)).astype(np.float32),
         "prob": rng.integers(0, 2, (22, 1)).astype(np.float32)}
    trainer = graphc.compile(model, batch_size=4, devices="cpu:2")
    trainer.fit(x, y, epochs=2, verbose=0)
    ours = trainer.evaluate(x, y)
    trainer.to_keras(model)
    theirs = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert sorted(ours) == sorted(theirs) == [
        "loss", "prob_accuracy", "prob_loss", "zscore_loss"]
    for name in theirs:
        assert abs(ours[name] - theirs[name]) < 1e-5, name
    predicted, expected = trainer.predict(x), model.predict(x, verbose=0)
    assert sorted(predicted) == sorted(expected) == ["prob", "zscore"]
    for name in expected:
        assert np.max(np.abs(predicted[name] - expected[name])) < 1e-5


def test_weighted_evaluate_agrees_with_keras(trained, flat):
    """Keras weighs the loss by sample_weight and not its compiled metrics;
    1000 examples at 256 end with a short batch."""
    model, trainer, _ = trained
    _, _, x_test, y_test = flat
    w = np.random.default_rng(5).uniform(0.0, 3.0, 1000).astype(np.float32)
    ours = trainer.evaluate(x_test[:1000], y_test[:1000], sample_weight=w)
    trainer.to_keras(model)
    theirs = model.evaluate(x_test[:1000], y_test[:1000], sample_weight=w,
                            batch_size=256, verbose=0, return_dict=True)
    plain = trainer.evaluate(x_test[:1000], y_test[:1000])
    assert abs(ours["loss"] - theirs["loss"]) < 1e-5
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 1e-5
    assert abs(ours["loss"] - plain["loss"]) > 1e-3  # the weights count


def test_class_weight_is_keras_per_example_weight(flat):
    """fit(class_weight=...) trains exactly as fit(sample_weight=...) with
    Keras' class_weight_to_sample_weights of the labels."""
    x_train, y_train, _, _ = flat
    x, y = x_train[:3000], y_train[:3000]
    class_weight = {0: 2.0, 3: 0.5, 7: 4.0}
    per_example = np.array([class_weight.get(int(c), 1.0) for c in y],
                           dtype=np.float32)
    results = []
    for kwargs in ({"class_weight": class_weight},
                   {"sample_weight": per_example}, {}):
        keras.backend.clear_session()  # the same layer names each time
        keras.utils.set_random_seed(3)
        trainer = graphc.compile(mlp(keras), batch_size=256, devices="cpu")
        history = trainer.fit(x, y, epochs=1, shuffle=False, verbose=0,
                              **kwargs)
        results.append((history.history["loss"][0],
                        {k: np.array(v) for k, v in
                         trainer.get_weights().items()}))
    (loss_c, w_c), (loss_s, w_s), (loss_n, w_n) = results
    assert loss_c == loss_s
    assert w_c.keys() == w_s.keys() == w_n.keys()
    assert all(np.array_equal(w_c[k], w_s[k]) for k in w_c)
    assert not all(np.allclose(w_c[k], w_n[k]) for k in w_c)
    with pytest.raises(ValueError, match="class_weight"):
        trainer.fit(x, y, class_weight=class_weight, sample_weight=per_example,
                    verbose=0)


def test_a_model_of_two_outputs_takes_and_gives_one_array_each(flat):
    """Keras' dict of losses, loss_weights and metrics per output: fit on a
    dict of targets, evaluate and predict agree with Keras' own on the
    trained weights, under the names Keras logs."""
    x_train, y_train, x_test, y_test = flat
    # The second output regresses the image's mean brightness.
    def brightness(x):
        return x.mean(axis=1, keepdims=True).astype(np.float32)
    keras.utils.set_random_seed(8)
    pixels = keras.Input((784,), name="pixels")
    h = keras.layers.Dense(64, activation="relu")(pixels)
    label = keras.layers.Dense(10, activation="softmax", name="label")(h)
    light = keras.layers.Dense(1, name="light")(h)
    model = keras.Model(pixels, [label, light])
    model.compile(optimizer="adam",
                  loss={"label": "sparse_categorical_crossentropy",
                        "light": "mse"},
                  loss_weights={"label": 1.0, "light": 0.5},
                  metrics={"label": ["accuracy"], "light": ["mae"]})
    trainer = graphc.compile(model, batch_size=200, devices="cpu:2")
    history = trainer.fit(x_train[:12000],
                          {"label": y_train[:12000],
                           "light": brightness(x_train[:12000])},
                          epochs=2, verbose=0)
    assert {"loss", "label_loss", "light_loss", "label_accuracy",
            "light_mae"} <= set(history.history)
    # The list form of y, in the outputs' order, is the same targets.
    targets = [y_test, brightness(x_test)]
    ours = trainer.evaluate(x_test, targets)
    trainer.to_keras(model)
    theirs = model.evaluate(x_test, targets, batch_size=200, verbose=0,
                            return_dict=True)
    assert set(ours) == set(theirs)
    for name in theirs:
        assert abs(ours[name] - theirs[name]) < 1e-5, name
    assert ours["label_accuracy"] > 0.75
    mine = trainer.predict(x_test[:600])
    keras_own = model.predict(x_test[:600], batch_size=200, verbose=0)
    assert [a.shape for a in mine] == [(600, 10), (600, 1)]
    for a, b in zip(mine, keras_own):
        assert np.max(np.abs(a - b)) < 1e-5
    with pytest.raises(graphc.InvalidDataError, match="'shade'"):
        trainer.evaluate(x_test, {"label": y_test, "shade": targets[1]})


def mlp_under(policy):
    """The guide's MLP (SGD) built under Keras' global dtype `policy`."""
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(3)
        return mlp(keras, optimizer="sgd")
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _bf16_on_onednn():
    """Whether the cpu backend runs a bf16 plan on oneDNN's bf16 primitives:
    GRAPH_CPU_BF16's rule (DnnlContext.cpp), auto picking them where the
    CPU has AVX512-BF16 (AMX has it too)."""
    path = os.environ.get("GRAPH_CPU_BF16", "auto")
    if path != "auto":
        return path == "onednn"
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read().split()


def train_and_return(model, flat, policy):
    """graphc trains `model` for 12800 examples, evaluates it, hands the
    weights back (float32, the layers keeping `policy`) and Keras evaluates
    them: (trainer, ours, theirs)."""
    x_train, y_train, x_test, y_test = flat
    trainer = graphc.compile(model, batch_size=256, devices="cpu")
    history = trainer.fit(x_train[:12800], y_train[:12800], epochs=1,
                          verbose=0)
    assert history.history["loss"][0] < 2.3
    ours = trainer.evaluate(x_test[:2560], y_test[:2560])
    trainer.to_keras(model)
    assert all(str(w.dtype) == "float32" for w in model.weights)
    assert model.layers[1].dtype_policy.name == policy
    theirs = model.evaluate(x_test[:2560], y_test[:2560], batch_size=256,
                            verbose=0, return_dict=True)
    return trainer, ours, theirs


def test_a_mixed_bfloat16_model_trains_in_it_and_comes_back_float32(flat):
    """Built under keras.mixed_precision's mixed_bfloat16, the guide's MLP
    trains in bfloat16 (its layers carry the policy); the weights that come
    back are float32, as Keras keeps them, and Keras' own bf16 evaluation of
    them agrees with ours within bfloat16's noise (one rounding step of the
    loss, 2^-8) and far closer than a float32 evaluation (precision=
    "float32") of the same weights does."""
    _, _, x_test, y_test = flat
    model = mlp_under("mixed_bfloat16")
    trainer, ours, theirs = train_and_return(model, flat, "mixed_bfloat16")
    assert abs(ours["loss"] - theirs["loss"]) <= 2 ** -8 * theirs["loss"]
    # Ours is Keras' bf16 loss, not float32's. On the widened float32
    # kernels (a CPU without bf16 instructions) it rounds as NumPy's bf16
    # does: 3e-5 from it where float32 is 4e-4 away (seed 3, 2560 test
    # images). oneDNN's bf16 primitives (the default where the CPU has
    # AVX512-BF16 or AMX) round each output once from their own order of
    # summation, which moves the roundings of near-ties by as much as bf16
    # moves the loss from float32's; over 2560 images that noise decides
    # (2.4e-4 from Keras' bf16 loss where float32 is 2.1e-4 away, AMD EPYC
    # with AVX512-BF16, the training data shuffled whole), over all 10000
    # bf16's own shift shows (2.0e-4 where float32 is 2.5e-4 away).
    onednn = _bf16_on_onednn()
    n = len(x_test) if onednn else 2560
    if onednn:
        ours = trainer.evaluate(x_test, y_test)
        theirs = model.evaluate(x_test, y_test, batch_size=256, verbose=0,
                                return_dict=True)
    # The same weights evaluated in float32.
    f32 = graphc.compile(model, batch_size=256, devices="cpu",
                         precision="float32")
    exact = f32.evaluate(x_test[:n], y_test[:n])
    margin = 1 if onednn else 3
    assert abs(ours["loss"] - theirs["loss"]) < \
        abs(exact["loss"] - theirs["loss"]) / margin
    with pytest.raises(graphc.InvalidModelError, match="unknown precision"):
        graphc.compile(model, batch_size=256, precision="mixed_bfloat8")


def test_a_mixed_float16_model_trains_with_keras_loss_scaling(flat):
    """Under mixed_float16 Keras' compile wraps the optimizer in a
    LossScaleOptimizer; graphc trains the guide's MLP with it (float16
    activations and gradients, the loss scaled, overflowing steps skipped),
    the weights come back float32, and Keras' own float16 evaluation of
    them agrees with ours within float16's noise (a few roundings of
    2^-11 of the loss)."""
    model = mlp_under("mixed_float16")
    assert type(model.optimizer).__name__ == "LossScaleOptimizer"
    _, ours, theirs = train_and_return(model, flat, "mixed_float16")
    assert abs(ours["loss"] - theirs["loss"]) <= 2 ** -9 * theirs["loss"]
    assert abs(ours["accuracy"] - theirs["accuracy"]) <= 2 / 2560


def _small_classifier(seed, batch=None):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((4,), batch_size=batch),
        keras.layers.Dense(8, activation="tanh"),
        keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_a_batch_graphc_chose_gives_way_to_fits_first_batch_size():
    # Without graphc.compile(batch_size=...), fit(batch_size=64) trains in
    # batches of 64, as Keras' fit does: ceil(200 / 64) steps an epoch. Once
    # a trainer has run, another batch size is refused, not ignored.
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    y = rng.integers(0, 3, 200)
    trainer = graphc.compile(_small_classifier(0), devices="cpu:1")
    assert trainer.batch_size == 32
    trainer.fit(x, y, batch_size=64, epochs=2, shuffle=False, verbose="auto")
    assert trainer.batch_size == 64 and trainer.step == 2 * 4
    with pytest.raises(ValueError, match="batch_size=32; the trainer runs "
                                         "the batch of its first run, 64"):
        trainer.evaluate(x, y, batch_size=32)
    fixed = graphc.compile(_small_classifier(0), batch_size=32,
                           devices="cpu:1")
    with pytest.raises(ValueError, match="compiled for 32"):
        fixed.fit(x, y, batch_size=64, verbose=0)
    # A batch the replicas cannot share equally is refused at compile.
    with pytest.raises(graphc.InvalidModelError,
                       match="global batch 6 does not divide into 4 replicas"):
        graphc.compile(_small_classifier(0), batch_size=6, devices="cpu:4")


def test_class_weight_keys_keras_would_never_find_are_refused():
    # Keras weighs a label by class_weight.get(int(label), 1.0): a str or a
    # fractional key is never found. An empty dict weighs every class 1.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    trainer = graphc.compile(_small_classifier(3), batch_size=8,
                             devices="cpu:1")
    for bad in ({"1": 4.0}, {1.5: 4.0}):
        with pytest.raises(graphc.InvalidDataError, match="is no class index"):
            trainer.fit(x, y, class_weight=bad, verbose=0)
    with_empty = graphc.compile(_small_classifier(3), batch_size=8,
                                devices="cpu:1")
    without = graphc.compile(_small_classifier(3), batch_size=8,
                             devices="cpu:1")
    for key in (1, np.int64(1), 1.0, True):
        assert "1:" in graphc.trainer._class_weight_spec({key: 2.0})
    a = with_empty.fit(x, y, class_weight={}, shuffle=False, verbose=0)
    b = without.fit(x, y, shuffle=False, verbose=0)
    assert a.history == b.history and with_empty.step == 40 // 8
    # epochs == initial_epoch: Keras runs no epoch.
    assert with_empty.fit(x, y, epochs=3, initial_epoch=3).history == {}
    assert with_empty.step == 40 // 8


def test_evaluate_as_a_list_is_in_keras_order():
    # Keras' _flatten_metrics_in_order: loss, each output's loss, then every
    # other log sorted; one output keeps its metrics' compiled order.
    keras.utils.set_random_seed(14)
    x_in = keras.Input((4,), name="x")
    h = keras.layers.Dense(6, activation="tanh")(x_in)
    model = keras.Model(x_in, [keras.layers.Dense(3, name="zeta")(h),
                               keras.layers.Dense(2, name="alpha")(h)])
    model.compile(optimizer="sgd", loss=["mse", "mae"],
                  metrics=[["mse", "mae"], ["mae", "mse"]])
    rng = np.random.default_rng(15)
    x = rng.random((16, 4)).astype(np.float32)
    y = [rng.random((16, 3)).astype(np.float32),
         rng.random((16, 2)).astype(np.float32)]
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    theirs = model.evaluate(x, y, batch_size=4, verbose=0)
    np.testing.assert_allclose(trainer.evaluate(x, y, return_dict=False),
                               theirs, rtol=1e-5)
    single = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    single.compile(optimizer="sgd", loss="mse",
                   metrics=["mse", "mae", "accuracy"])
    trainer = graphc.compile(single, batch_size=4, devices="cpu:1")
    np.testing.assert_allclose(
        trainer.evaluate(x, y[0], return_dict=False),
        single.evaluate(x, y[0], batch_size=4, verbose=0), rtol=1e-5)


@pytest.mark.filterwarnings("ignore:When providing `inputs` as a dict")
def test_keras_list_and_dict_forms_of_inputs_targets_and_weights(tmp_path):
    # A model compiled from its file takes lists as the live one does; a
    # dict-input model takes its keys; one output takes [y]; the same
    # sample_weight per output is one, different ones are refused.
    keras.utils.set_random_seed(16)
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="bb")
    h = keras.layers.Dense(6, activation="tanh")(
        keras.layers.Concatenate()([a, b]))
    two = keras.Model([a, b], [keras.layers.Dense(3, name="cls")(h),
                               keras.layers.Dense(2, name="reg")(h)])
    two.compile(optimizer="sgd", loss=["mse", "mse"])
    two.save(tmp_path / "two.keras")
    rng = np.random.default_rng(17)
    xa = rng.random((12, 4)).astype(np.float32)
    xb = rng.random((12, 3)).astype(np.float32)
    ys = [rng.random((12, 3)).astype(np.float32),
          rng.random((12, 2)).astype(np.float32)]
    from_file = graphc.compile(str(tmp_path / "two.keras"), batch_size=4,
                               devices="cpu:1")
    expected = two.predict([xa, xb], verbose=0)
    for got, want in zip(from_file.predict([xa, xb]), expected):
        np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(
        from_file.evaluate([xa, xb], ys)["loss"],
        two.evaluate([xa, xb], ys, batch_size=4, verbose=0)[0], rtol=1e-5)
    w = rng.uniform(0.5, 2, 12).astype(np.float32)
    live = graphc.compile(two, batch_size=4, devices="cpu:1")
    assert live.evaluate([xa, xb], ys, sample_weight=[w, w]) == \
        live.evaluate([xa, xb], ys, sample_weight=w)
    assert live.evaluate([xa, xb], ys, sample_weight={"cls": w, "reg": w}) \
        == live.evaluate([xa, xb], ys, sample_weight=w)
    with pytest.raises(graphc.UnsupportedError, match="sample_weight per "
                                                      "output, and they differ"):
        live.evaluate([xa, xb], ys, sample_weight=[w, 2 * w])

    keyed = keras.Model({"zz": a, "b": b},
                        keras.layers.Dense(2, name="out")(h))
    keyed.compile(optimizer="sgd", loss="mse")
    trainer = graphc.compile(keyed, batch_size=4, devices="cpu:1")
    np.testing.assert_allclose(
        trainer.predict({"zz": xa, "b": xb}),
        keyed.predict({"zz": xa, "b": xb}, verbose=0), atol=1e-6)
    with pytest.warns(UserWarning, match="no input named 'extra'"):
        np.testing.assert_allclose(
            trainer.predict({"zz": xa, "b": xb, "extra": xa}),
            keyed.predict({"zz": xa, "b": xb}, verbose=0), atol=1e-6)
    np.testing.assert_allclose(
        trainer.evaluate({"zz": xa, "b": xb}, [ys[1]])["loss"],
        keyed.evaluate({"zz": xa, "b": xb}, ys[1], batch_size=4,
                       verbose=0), rtol=1e-5)

    scalar = keras.Sequential([keras.Input((1,)), keras.layers.Dense(2)])
    scalar.compile(optimizer="sgd", loss="mse")
    trainer = graphc.compile(scalar, batch_size=4, devices="cpu:1")
    np.testing.assert_allclose(trainer.predict(xa[:, 0]),
                               scalar.predict(xa[:, :1], verbose=0), atol=1e-6)


def test_a_loss_scaled_softmax_cross_entropy_trains_on_its_logits():
    # With a LossScaleOptimizer the loss gradient is scaled before the
    # softmax's: training still takes the cross-entropy of the logits (as
    # TensorFlow's backend does, and as evaluate does), not of clipped
    # probabilities. A saturated softmax tells them apart.
    rng = np.random.default_rng(18)
    x = (50 * rng.normal(size=(8, 4))).astype(np.float32)
    y = rng.integers(0, 3, 8)

    def trained(optimizer):
        keras.utils.set_random_seed(19)
        model = keras.Sequential([keras.Input((4,)),
                                  keras.layers.Dense(3, activation="softmax")])
        model.compile(optimizer=optimizer,
                      loss="sparse_categorical_crossentropy")
        kernel, bias = model.get_weights()
        z = x @ kernel + bias
        z = z - z.max(axis=1, keepdims=True)
        expected = float(np.mean(np.log(np.exp(z).sum(axis=1)) -
                                 z[np.arange(8), y]))
        trainer = graphc.compile(model, batch_size=8, devices="cpu:1")
        assert abs(trainer.evaluate(x, y)["loss"] - expected) < 1e-4 * expected
        loss = trainer.fit(x, y, shuffle=False, verbose=0).history["loss"][0]
        assert abs(loss - expected) < 1e-4 * expected
        return trainer.to_keras(model).get_weights()

    plain = trained(keras.optimizers.SGD(0.01))
    scaled = trained(keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.01)))
    for a, b in zip(scaled, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_an_integer_input_is_fed_as_keras_casts_it():
    # keras.Input(dtype="uint8") (an InputLayer's dtype is its tensor's, not
    # a policy) before Rescaling; and an int32 input into Dense.
    rng = np.random.default_rng(20)
    x = rng.integers(0, 256, (12, 6)).astype(np.uint8)
    for dtype, first in (("uint8", keras.layers.Rescaling(1 / 255)),
                         ("int32", keras.layers.Dense(4))):
        keras.utils.set_random_seed(21)
        model = keras.Sequential([keras.Input((6,), dtype=dtype), first,
                                  keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
        trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
        np.testing.assert_allclose(
            trainer.predict(x.astype(dtype)),
            model.predict(x.astype(dtype), verbose=0), rtol=1e-5, atol=1e-4)


def test_step_is_keras_iterations_under_gradient_accumulation():
    # Keras' optimizer.iterations is its steps // gradient_accumulation_steps
    # (base_optimizer.iterations).
    rng = np.random.default_rng(22)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    model = keras.Sequential([keras.Input((6,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(keras.optimizers.SGD(0.1, gradient_accumulation_steps=2),
                  "sparse_categorical_crossentropy")
    trainer = graphc.compile(model, batch_size=16, devices="cpu:1")
    trainer.fit(x, y, epochs=1, verbose=0)
    assert trainer.step == (64 // 16) // 2


@pytest.mark.filterwarnings("ignore:You are saving your model as an HDF5")
def test_a_legacy_h5_model_file_compiles_with_its_weights(tmp_path):
    # Keras' model.save("m.h5"): Keras reads its config, compile() and
    # weights; the trainer starts from those weights.
    keras.utils.set_random_seed(23)
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.save(tmp_path / "m.h5")
    x = np.random.default_rng(24).normal(size=(10, 4)).astype(np.float32)
    trainer = graphc.compile(str(tmp_path / "m.h5"), batch_size=5,
                             devices="cpu:1")
    np.testing.assert_allclose(trainer.predict(x), model.predict(x, verbose=0),
                               atol=1e-6)
    model.save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(graphc.InvalidModelError, match="weights alone"):
        graphc.compile(str(tmp_path / "w.weights.h5"), batch_size=5)


def test_a_nested_functional_call_as_an_output_is_that_call():
    # Keras 3 numbers a nested Functional's calls in output_layers from 1
    # (node 0 is the one it was built with), in inbound_nodes from 0.
    keras.utils.set_random_seed(25)
    inner = keras.Input((4,))
    leaf = keras.Model(inner, keras.layers.Dense(3, name="leaf_d")(inner),
                       name="leaf")
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    model = keras.Model([a, b], [leaf(a),
                                 keras.layers.Dense(2, name="head")(leaf(b))])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(26)
    xa = rng.normal(size=(8, 4)).astype(np.float32)
    xb = (rng.normal(size=(8, 4)) + 3).astype(np.float32)
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    for got, want in zip(trainer.predict([xa, xb]),
                         model.predict([xa, xb], verbose=0)):
        np.testing.assert_allclose(got, want, atol=1e-5)
    # A nested model of two inputs (its call records a mask per input).
    p, q = keras.Input((4,)), keras.Input((4,))
    sub = keras.Model([p, q], keras.layers.Dense(
        2, name="sub_d")(keras.layers.Subtract()([p, q])), name="sub")
    paired = keras.Model([a, b], keras.layers.Dense(3, name="o")(sub([b, a])))
    paired.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(
        graphc.compile(paired, batch_size=4, devices="cpu:1").predict(
            [xa, xb]), paired.predict([xa, xb], verbose=0), atol=1e-5)
    # The transfer-learning form: a model whose output is a base's call.
    x = keras.Input((4,))
    whole = keras.Model(x, leaf(x))
    whole.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(
        graphc.compile(whole, batch_size=4, devices="cpu:1").predict(xa),
        whole.predict(xa, verbose=0), atol=1e-5)


@pytest.mark.parametrize("devices", ["cpu:1", "cpu:2"])
def test_a_shared_batch_norm_updates_its_statistics_once_a_call(devices):
    # Keras assigns a BatchNormalization's moving statistics at each call,
    # in order: one step of a layer shared by two inputs (momentum 0.5,
    # moving mean 0) leaves 0.25 mean(x1) + 0.5 mean(x2).
    keras.utils.set_random_seed(27)
    shared = keras.layers.BatchNormalization(momentum=0.5, name="bn")
    a, b = keras.Input((2,), name="a"), keras.Input((2,), name="b")
    out = keras.layers.Dense(1, name="o")(
        keras.layers.Add()([shared(a), shared(b)]))
    model = keras.Model([a, b], out)
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    rng = np.random.default_rng(28)
    x1 = (rng.normal(size=(8, 2)) + 1).astype(np.float32)
    x2 = (rng.normal(size=(8, 2)) + 5).astype(np.float32)
    y = rng.normal(size=(8, 1)).astype(np.float32)
    trainer = graphc.compile(model, batch_size=8, devices=devices)
    trainer.fit([x1, x2], y, shuffle=False, verbose=0)
    trainer.to_keras(model)
    moving_mean = shared.moving_mean.numpy()
    np.testing.assert_allclose(
        moving_mean, 0.25 * x1.mean(axis=0) + 0.5 * x2.mean(axis=0),
        rtol=1e-5)


def test_a_shared_conv_with_bias_one_call_pooled_compiles():
    # The bias gradients of a conv shared by two inputs are added before
    # the pooled call's kernel gradient: the fused pool gradient, which
    # would move the bias gradient there, is left unfused (the importer
    # stopped at "operand does not dominate this use").
    keras.utils.set_random_seed(29)
    a = keras.Input((4, 4, 1), name="a")
    c = keras.Input((4, 4, 1), name="c")
    conv = keras.layers.Conv2D(2, 1, name="shared_conv")
    pooled = keras.layers.Flatten()(keras.layers.MaxPooling2D()(conv(a)))
    plain = keras.layers.Dense(8)(keras.layers.Flatten()(conv(c)))
    model = keras.Model([a, c], keras.layers.Add()([pooled, plain]))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    rng = np.random.default_rng(30)
    xa, xc = (rng.normal(size=(8, 4, 4, 1)).astype(np.float32)
              for _ in range(2))
    trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
    np.testing.assert_allclose(trainer.predict([xa, xc]),
                               model.predict([xa, xc], verbose=0), atol=1e-5)


_KERAS_TRAINED_FIRST = r'''
import os
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np, keras, graphc
rng = np.random.default_rng(7)
x = rng.normal(size=(44, 6)).astype("float32")
y = rng.normal(size=(44, 2)).astype("float32")
keras.utils.set_random_seed(3)
m = keras.Sequential([keras.Input((6,)),
                      keras.layers.Dense(5, activation="tanh"),
                      keras.layers.Dense(2)])
m.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
trainer = graphc.compile(m, batch_size=8, devices="cpu:1")
m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
trainer.fit(x, y, epochs=1, shuffle=False, verbose=0)
assert trainer.step == int(m.optimizer.iterations.numpy()) == 12
ours = trainer.get_weights()
worst = max(float(np.abs(ours[f"{l.name}/{v.name}"] - np.asarray(v)).max())
            for l in m.layers for v in l.weights)
print("worst", worst)
assert worst < 1e-5, worst

# And back: a trainer of a model Keras never trained fits an epoch and
# saves; Keras loads the file and goes on (the moments, the iterations,
# Nadam's u_product) as the trainer does. Adam with weight decay is named
# "adam" by Keras, AdamW without it "adam_w"; a name of the user's counts
# for nothing: each is matched by its class.
for make in (lambda: keras.optimizers.Adam(0.01),
             lambda: keras.optimizers.Adam(0.01, weight_decay=0.01),
             lambda: keras.optimizers.AdamW(0.01, weight_decay=0.0),
             lambda: keras.optimizers.Adam(0.01, name="my_optimizer"),
             lambda: keras.optimizers.Nadam(0.01)):
    keras.utils.set_random_seed(3)
    fresh = keras.Sequential([keras.Input((6,)),
                              keras.layers.Dense(5, activation="tanh"),
                              keras.layers.Dense(2)])
    fresh.compile(optimizer=make(), loss="mse")
    trainer = graphc.compile(fresh, batch_size=8, devices="cpu:1")
    trainer.fit(x, y, epochs=1, shuffle=False, verbose=0)
    path = os.path.join(os.path.dirname(__file__), "after.keras")
    trainer.save(path)
    keras_again = keras.saving.load_model(path)
    assert int(keras_again.optimizer.iterations.numpy()) == 6
    keras_again.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    trainer.fit(x, y, epochs=1, shuffle=False, verbose=0)
    ours = trainer.get_weights()
    worst = max(float(np.abs(ours[f"{l.name}/{v.name}"] - np.asarray(v)).max())
                for l in keras_again.layers for v in l.weights)
    print(type(fresh.optimizer).__name__, "back worst", worst)
    assert worst < 1e-5, (fresh.optimizer.name, worst)
'''


def test_a_model_keras_trained_goes_on_from_its_optimizer_state(tmp_path):
    # Keras trains an epoch; graphc compiles the live model and trains the
    # next; Keras trains the same next epoch. Adam's moments and iterations
    # come along (jax backend, in a process of its own: training needs it).
    # Then back: the trainer saves, Keras loads and trains a third epoch,
    # as the trainer does.
    script = tmp_path / "keras_first.py"
    script.write_text(_KERAS_TRAINED_FIRST)
    env = dict(os.environ, KERAS_BACKEND="jax")
    done = subprocess.run([sys.executable, str(script)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "back worst" in done.stdout


_FAILING_STREAMS = r'''
import os, sys
import numpy as np, keras, graphc


class Failing:
    """A text stream whose writes raise, as a closed one or a broken pipe
    does (or a notebook's stream when Ctrl-C lands in its write)."""
    def __init__(self, error):
        self.error = error
    def write(self, text):
        raise self.error
    def flush(self):
        pass


rng = np.random.default_rng(1)
x = rng.normal(size=(12, 4)).astype(np.float32)
y = rng.normal(size=(12, 2)).astype(np.float32)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
model.compile(optimizer="sgd", loss="mse")
trainer = graphc.compile(model, batch_size=4, devices="cpu:1")
for error in (ValueError("I/O operation on closed file"),
              KeyboardInterrupt()):
    sys.stdout = Failing(error)
    try:
        trainer.fit(x, y, epochs=1, verbose=1)
        raised = None
    except BaseException as e:
        raised = e
    finally:
        sys.stdout = sys.__stdout__
    print("raised", type(raised).__name__, "step", trainer.step, flush=True)
# No stream at all (pythonw): the lines go to the descriptor, nothing raised.
sys.stdout = None
trainer.fit(x, y, epochs=1, verbose=1)
sys.stdout = sys.__stdout__
print("no stream: step", trainer.step, flush=True)
'''


def test_a_python_stream_that_raises_does_not_abort_the_process(tmp_path):
    # pybind11's redirect let the stream's exception out of a C++ flush that
    # cannot throw: the process aborted (SIGABRT). Now the job runs to its
    # end, its lines reach file descriptor 1, and fit raises what the
    # write raised, as print() would.
    script = tmp_path / "failing_streams.py"
    script.write_text(_FAILING_STREAMS)
    done = subprocess.run([sys.executable, str(script)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "raised ValueError step 3" in out, out
    assert "raised KeyboardInterrupt step 6" in out, out
    assert "no stream: step 9" in out, out
    # Each fit's own lines, written to the descriptor instead.
    assert out.count("Loss for final step") == 3, out
