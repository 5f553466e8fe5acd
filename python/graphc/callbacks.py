"""fit's callbacks, as Keras names them and with Keras' defaults.

graphc runs them in C++ at every epoch's end, on every worker (the same
decisions everywhere): EarlyStopping, ReduceLROnPlateau, ModelCheckpoint
(save_best_only=True), CSVLogger and TensorBoard. Keras' own callback
objects of these classes are taken too (their arguments are read back),
and after the fit they hold the state Keras' would (EarlyStopping's
stopped_epoch, best, best_epoch and wait; ModelCheckpoint's best, which the
next fit starts from, as Keras keeps it across fits).
"""

import math


def _options(pairs):
    items = []
    for key, value in pairs:
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        items.append(f"{key}={value}")
    return ",".join(items)


class Callback:
    """A callback graphc runs itself; `flag` and `value` are graphrun's."""

    flag = None

    def value(self):
        raise NotImplementedError

    def end(self, callback, state):
        """After the job: `callback` (the object fit was given: this one,
        or Keras' it was made from) takes the state Keras' would hold, from
        `state`, the job's callbacks' own (FitCallbacksHook::saveState)."""


class EarlyStopping(Callback):
    flag = "early_stopping"

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0,
                 mode="auto", baseline=None, restore_best_weights=False,
                 start_from_epoch=0):
        self.args = dict(monitor=monitor, min_delta=min_delta,
                         patience=patience, verbose=verbose, mode=mode,
                         baseline=baseline,
                         restore_best_weights=restore_best_weights,
                         start_from_epoch=start_from_epoch)
        # Keras' state after a fit (on_train_begin resets it).
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0

    def value(self):
        return _options(self.args.items())

    def end(self, callback, state):
        e = state.get("early_stopping")
        if e is not None:
            _set_state((self, callback), dict(
                wait=e["wait"], stopped_epoch=e["stopped_epoch"],
                best=e["best"], best_epoch=e["best_epoch"]))


class ReduceLROnPlateau(Callback):
    flag = "reduce_lr_on_plateau"

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0,
                 mode="auto", min_delta=1e-4, cooldown=0, min_lr=0.0):
        self.args = dict(monitor=monitor, factor=factor, patience=patience,
                         verbose=verbose, mode=mode, min_delta=min_delta,
                         cooldown=cooldown, min_lr=min_lr)

    def value(self):
        return _options(self.args.items())


class ModelCheckpoint(Callback):
    """ModelCheckpoint(save_best_only=True): the best epoch's model, in the
    format its file name says (.keras, .h5, .weights.h5)."""

    flag = "checkpoint_best"

    def __init__(self, filepath, monitor="val_loss", verbose=0,
                 save_best_only=True, save_weights_only=None, mode="auto",
                 save_freq="epoch", initial_value_threshold=None):
        from .errors import UnsupportedError
        if not save_best_only:
            raise UnsupportedError(
                "ModelCheckpoint(save_best_only=False): graphc saves the best "
                "epoch only; for every epoch's model, fit one epoch at a time "
                "and save() after each")
        if save_freq != "epoch":
            raise UnsupportedError(
                f"ModelCheckpoint(save_freq={save_freq!r}): graphc saves at "
                "epochs' ends only (save_freq='epoch')")
        # The file's name says the format, as Keras requires it to match
        # save_weights_only.
        name = str(filepath)
        if save_weights_only is not None and bool(save_weights_only) != \
                name.endswith(".weights.h5"):
            raise ValueError(
                f"ModelCheckpoint: save_weights_only={save_weights_only} "
                f"needs a filepath that ends in "
                + ("'.weights.h5'" if save_weights_only else
                   "'.keras' (or '.h5')") + f", got '{name}'")
        self.args = dict(filepath=filepath, monitor=monitor, verbose=verbose,
                         mode=mode)
        # The value to beat, which Keras keeps across fits (it never resets
        # it): each fit starts from the best of the fits before.
        self.best = initial_value_threshold

    def value(self):
        return _options(list(self.args.items()) + [
            ("initial_value_threshold", _finite(self.best))])

    def end(self, callback, state):
        b = state.get("checkpoint_best")
        if b is not None and b["best"] is not None:
            _set_state((self, callback), {"best": b["best"]})


class CSVLogger(Callback):
    flag = "csv_log"

    def __init__(self, filename, separator=",", append=False):
        if separator != "," or append:
            from .errors import UnsupportedError
            raise UnsupportedError("CSVLogger: only separator=',' and "
                                   "append=False")
        self.filename = str(filename)

    def value(self):
        return self.filename


class TensorBoard(Callback):
    """The epoch_* scalars (train/ and validation/) each epoch; Keras'
    histograms, images, per-batch scalars, profiling and embeddings are
    refused rather than left out. The graph is not written (write_graph)."""

    flag = "tensorboard"

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True,
                 write_images=False, write_steps_per_second=False,
                 update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        unsupported = [
            (name, value) for name, value, default in (
                ("histogram_freq", histogram_freq, 0),
                ("write_images", write_images, False),
                ("write_steps_per_second", write_steps_per_second, False),
                ("update_freq", update_freq, "epoch"),
                ("profile_batch", profile_batch, 0),
                ("embeddings_freq", embeddings_freq, 0),
                ("embeddings_metadata", embeddings_metadata, None))
            if value != default and not (name == "profile_batch"
                                         and value in ((0, 0), [0, 0]))]
        if unsupported:
            from .errors import UnsupportedError
            raise UnsupportedError(
                "TensorBoard: " + ", ".join(f"{n}={v!r}" for n, v in
                                             unsupported)
                + " is not supported (graphc writes the epoch_* scalars each "
                "epoch)")
        self.log_dir = str(log_dir)

    def value(self):
        return self.log_dir


def _set_state(objects, state):
    """Sets `state`'s attributes on each of `objects` (graphc's callback and
    the Keras object it was made from, or the one object twice)."""
    for target in objects:
        for key, value in state.items():
            setattr(target, key, value)


def _finite(value):
    """`value` if a finite number, else None (Keras' older ModelCheckpoint
    starts its best at +-inf: nothing to beat)."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


def from_keras(callback):
    """A keras.callbacks object of a class graphc runs, as graphc's."""
    name = type(callback).__name__
    get = lambda attr, default=None: getattr(callback, attr, default)
    if isinstance(callback, Callback):
        return callback
    if name == "EarlyStopping":
        mode = "max" if get("monitor_op") is not None and "greater" in str(get("monitor_op")) else get("mode", "auto")
        return EarlyStopping(monitor=get("monitor"), min_delta=abs(get("min_delta", 0)),
                             patience=get("patience"), verbose=get("verbose", 0),
                             mode=mode if mode in ("min", "max") else "auto",
                             baseline=get("baseline"),
                             restore_best_weights=get("restore_best_weights", False),
                             start_from_epoch=get("start_from_epoch", 0))
    if name == "ReduceLROnPlateau":
        return ReduceLROnPlateau(monitor=get("monitor"), factor=get("factor"),
                                 patience=get("patience"), verbose=get("verbose", 0),
                                 mode=get("mode", "auto"), min_delta=get("min_delta"),
                                 cooldown=get("cooldown"), min_lr=get("min_lr"))
    if name == "ModelCheckpoint":
        return ModelCheckpoint(get("filepath"), monitor=get("monitor"),
                               verbose=get("verbose", 0),
                               save_best_only=get("save_best_only"),
                               save_weights_only=get("save_weights_only"),
                               save_freq=get("save_freq", "epoch"),
                               mode=get("mode", "auto"),
                               initial_value_threshold=_finite(get("best")))
    if name == "CSVLogger":
        return CSVLogger(get("filename"), get("sep", ","), get("append", False))
    if name == "TensorBoard":
        # Keras keeps profile_batch as _start_batch/_stop_batch, and
        # update_freq "epoch" as the string.
        profile = (get("_start_batch", 0), get("_stop_batch", 0))
        return TensorBoard(get("log_dir"), histogram_freq=get("histogram_freq", 0),
                           write_images=get("write_images", False),
                           write_steps_per_second=get("write_steps_per_second", False),
                           update_freq=get("update_freq", "epoch"),
                           profile_batch=0 if profile == (0, 0) else profile,
                           embeddings_freq=get("embeddings_freq", 0),
                           embeddings_metadata=get("embeddings_metadata"))
    from .errors import UnsupportedError
    raise UnsupportedError(
        f"callback {name}: graphc runs EarlyStopping, ReduceLROnPlateau, "
        "ModelCheckpoint(save_best_only=True), CSVLogger and TensorBoard")
