"""The Trainer: a compiled Keras model that fits, evaluates and predicts on
NumPy arrays, in C++.

A Trainer keeps the model's state (every weight, the optimizer's slots and
its step) between calls, as a Keras model does: a second fit() goes on
from the first, with the optimizer's iterations counting on. Each call runs
one job of the C++ runtime (graphrun's, TrainingJob.h) on the arrays as they
are: float32 C-order arrays are read in place and converted once into the
input pipeline; other numeric dtypes and Fortran order are converted there
too, never copied beforehand.
"""

import json
import math
import os
import tempfile
import warnings
import zipfile

import numpy as np

from . import _graphc
from . import callbacks as callbacks_module
from .errors import (InvalidDataError, InvalidModelError, UnsupportedError,
                     from_result)


class History:
    """What Keras' fit returns: `history` (each log's values by epoch),
    `epoch` (the epochs' numbers), `params` (Keras' verbose, epochs and
    steps, the batches an epoch), `model` (the Keras model compiled, None
    for one compiled from a file), and, graphc's, `timing` (the step
    timer's figures: mean step seconds, examples per second, and the step's
    split into input wait, hooks and compute)."""

    def __init__(self, epochs, first_epoch, timing, steps, stopped_early,
                 params=None, model=None):
        self.params = dict(params or {})
        self.model = model
        self.epoch = list(range(first_epoch, first_epoch + len(epochs)))
        keys = []
        for logs in epochs:
            for key in logs:
                if key not in keys:
                    keys.append(key)
        self.history = {k: [logs.get(k) for logs in epochs] for k in keys}
        self.timing = dict(timing)
        self.timing["steps"] = steps
        self.stopped_early = stopped_early

    def __repr__(self):
        return f"History(epochs={len(self.epoch)}, keys={list(self.history)})"


def _devices(devices):
    """"cpu", "cpu:2", "gpu", "gpu:2" as graphrun's --cpus/--gpus ("gpu" and
    "gpu:0": every GPU this process sees, --backend cuda)."""
    if devices is None:
        return {}, None
    kind, _, count = str(devices).partition(":")
    kind = kind.strip().lower()
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"devices={devices!r}: 'cpu', 'cpu:N', 'gpu' or 'gpu:N'")
    n = int(count) if count else (1 if kind == "cpu" else 0)
    if n < 0 or (kind == "cpu" and n == 0):
        raise ValueError(f"devices={devices!r}: a count of at least 1")
    if kind == "cpu":
        return {"cpus": n, "backend": "cpu"}, n
    # The cuda backend without a count takes every GPU, and says so where
    # there is none.
    if n == 0:
        return {"backend": "cuda"}, None
    return {"gpus": n, "backend": "cuda"}, n


def _job_seed(seed, fits):
    """The seed of a trainer's fit after `fits` others: the first fit's is
    the trainer's own, each later one is drawn from it (SplitMix64), so that
    every fit shuffles its data in a new order, as Keras' fit does each
    epoch, and the same calls with the same seed give the same orders. The
    job's pipeline draws each epoch's order from the seed and the epoch's
    number in the job, which starts at 0 in every job."""
    if fits == 0:
        return seed
    mask = (1 << 64) - 1
    z = (int(seed) + fits * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def _array(value, what):
    """`value` as an array the C++ side reads in place: numeric, native
    byte order, C or Fortran contiguous (else converted once here)."""
    a = np.asarray(value)
    if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8:
        raise InvalidDataError(
            f"{what}: dtype {a.dtype} is not a numeric type graphc reads "
            "(bool, int, uint, float16/32/64)")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        a = np.ascontiguousarray(a)
    if a.ndim == 0:
        raise InvalidDataError(f"{what}: a scalar; one row per example")
    return a


def _class_weight_spec(class_weight):
    """Keras' class_weight dict as graphrun's --class-weight pairs (None for
    an empty dict, which weighs every class 1)."""
    if not isinstance(class_weight, dict):
        raise InvalidDataError(
            "fit: class_weight is a dict of class index: weight")
    pairs = []
    for cls, weight in class_weight.items():
        # Keras looks each label up as class_weight.get(int(label)): a key
        # equal to no int (a str "1", a float 1.5) is never found, and its
        # weight silently unused; refused here rather than dropped.
        if not (isinstance(cls, (int, float, np.integer, np.floating))
                and float(cls).is_integer()):
            raise InvalidDataError(
                f"fit: class_weight key {cls!r} ({type(cls).__name__}) is no "
                "class index: Keras looks up class_weight.get(int(label)), "
                "which never finds it, so its weight would be unused; key "
                "the dict by int")
        try:
            pairs.append(f"{int(cls)}:{float(weight)!r}")
        except (TypeError, ValueError):
            raise InvalidDataError(
                f"fit: class_weight {cls!r}: {weight!r} is not a "
                "weight") from None
    return ",".join(pairs) or None


def _verbose(verbose):
    """Keras' verbose: 0, 1, 2 or "auto" (1, a progress bar)."""
    if isinstance(verbose, str):
        if verbose != "auto":
            raise ValueError(f"verbose={verbose!r}: 0, 1, 2 or 'auto'")
        return 1
    return int(verbose)


def _one_weight(sample_weight, names, what):
    """Keras' sample_weight of a model of several outputs may be a list or
    dict of one array an output; the plan weighs every output's loss by one
    per example, so they must be the same array."""
    if isinstance(sample_weight, dict):
        unknown = [k for k in sample_weight if names and k not in names]
        if unknown:
            raise InvalidDataError(
                f"{what}: sample_weight names no output '{unknown[0]}'; the "
                "model's outputs are " + ", ".join(f"'{n}'" for n in names))
        weights = list(sample_weight.values())
    elif isinstance(sample_weight, (list, tuple)):
        weights = list(sample_weight)
    else:
        return sample_weight
    if len(weights) == 1:
        return weights[0]
    if len(weights) != len(names) and not isinstance(sample_weight, dict):
        raise InvalidDataError(
            f"{what}: a list of {len(weights)} sample weights; the model has "
            f"{len(names) or 'one'} output(s)")
    arrays = [np.asarray(w) for w in weights]
    if not all(a.shape == arrays[0].shape and np.array_equal(a, arrays[0])
               for a in arrays[1:]) or len(arrays) < len(names):
        raise UnsupportedError(
            f"{what}: a sample_weight per output, and they differ (or leave "
            "an output out): graphc weighs every output by one sample_weight "
            "per example; give one array")
    return arrays[0]


class Trainer:
    """A Keras model compiled to a plan (see graphc.compile)."""

    def __init__(self, plan, keras_model, source, init_weights, batch_size,
                 device_options, workdir, input_names, outputs, seed,
                 outputs_as_dict=False, compile_plan=None, replicas=None,
                 learning_rate=None):
        self._plan_path = os.path.join(workdir.name, "model.plan")
        self._workdir = workdir
        # The job's replicas: each worker's (devices=) times the workers.
        self._replicas = (replicas or 1) * (
            _graphc.num_workers() if _graphc.launched_as_worker() else 1)
        # plan bytes for a global batch: where graphc.compile chose the
        # batch, the first run may ask for another, as Keras' fit takes any.
        self._compile_plan = compile_plan
        described = self._load(plan)
        self._keras_model = keras_model
        self._source = source
        self._init_weights = init_weights
        # Whether graphc.compile was given the batch (else it chose it).
        self._batch_given = batch_size is not None
        self._devices = device_options
        # The model's inputs by their InputLayers' names (a functional
        # model's dict keys, and the plan's inputs); a dict may also name
        # them by their input tensors' names, which a Sequential model
        # takes ("keras_tensor" for an unnamed keras.Input()).
        # A model that came as a file is named as Keras builds it from the
        # file's config (_file_signature), unless that is not the plan's
        # model; else its inputs and outputs as the plan names them (the
        # outputs without their shapes).
        if source and (outputs and len(outputs) != max(
                1, len(described["outputs"])) or any(
                    layer not in described["inputs"]
                    for _, layer in input_names)):
            input_names, outputs, outputs_as_dict = [], [], False
        if not input_names:
            input_names = [(n, n) for n in described["inputs"]]
        if not outputs and len(described["outputs"]) > 1:
            outputs = [(n, None) for n in described["outputs"]]
        self._input_names = []
        for _, layer in input_names:
            if layer not in self._input_names:
                self._input_names.append(layer)
        self._input_aliases = {tensor: layer for tensor, layer in input_names}
        # [(name, shape)] of the model's outputs, in its order.
        self._outputs = outputs
        self._outputs_as_dict = outputs_as_dict
        # The rate an earlier fit's ReduceLROnPlateau left (None: the
        # plan's, which is `learning_rate` where graphc.compile was given
        # one, else the model's).
        self._learning_rate = None
        self._compiled_learning_rate = learning_rate
        self._seed = seed
        # The fits run so far: each draws its own shuffle (_job_seed).
        self._fits = 0

    def _load(self, plan):
        """Makes `plan` (bytes) the trainer's; returns what it describes."""
        with open(self._plan_path, "wb") as f:
            f.write(plan)
        self._model = _graphc.Model(self._plan_path)
        described = self._model.describe()
        self._plan_batch = int(described["global_batch_size"])
        self._accumulation = max(
            1, int(described.get("gradient_accumulation_steps", 0)))
        if self._plan_batch % self._replicas:
            raise InvalidModelError(
                f"the global batch {self._plan_batch} does not divide into "
                f"{self._replicas} replicas: give a batch_size that is a "
                "multiple of the replicas (each replica takes an equal "
                "share, as under MirroredStrategy)")
        return described

    @property
    def batch_size(self):
        """The global batch the trainer runs (its plan's)."""
        return self._plan_batch

    # --- the jobs ----------------------------------------------------------

    def _inputs(self, x, what):
        """The arrays of x: one array (named x), or a dict by input name
        (the functional API's), or a list in the model's input order."""
        if x is None:
            raise InvalidDataError(f"{what}: x (the inputs) is missing")
        if isinstance(x, (list, tuple)) and len(x) == 1:
            x = x[0]
        if isinstance(x, (list, tuple)):
            if len(x) != len(self._input_names):
                raise InvalidDataError(
                    f"{what}: a list of {len(x)} arrays; the model has "
                    f"{len(self._input_names) or 'one'} input(s)")
            x = dict(zip(self._input_names, x))
        if isinstance(x, dict):
            arrays = {}
            for key, value in x.items():
                name = self._input_aliases.get(key, key)
                if self._input_names and name not in self._input_names:
                    # Keras warns that the structure differs and leaves the
                    # array out.
                    warnings.warn(
                        f"{what}: no input named '{name}' (the model's inputs "
                        "are " + ", ".join(f"'{n}'" for n in self._input_names)
                        + "): its array is not used", stacklevel=3)
                    continue
                if str(name) in arrays:
                    raise InvalidDataError(
                        f"{what}: input '{name}' is given twice (as '{key}' "
                        "and by another name)")
                arrays[str(name)] = _array(value, f"{what}['{name}']")
            missing = [n for n in self._input_names if n not in arrays]
            if missing:
                raise InvalidDataError(
                    f"{what}: no array for the model's input(s) "
                    + ", ".join(f"'{n}'" for n in missing))
            if len(arrays) == 1:
                arrays = {"x": next(iter(arrays.values()))}
            return arrays
        return {"x": _array(x, what)}

    def _pair(self, x, y, what, sample_weight=None):
        arrays = self._inputs(x, f"{what} x")
        if y is None:
            raise InvalidDataError(f"{what}: y (the labels) is missing")
        names = [name for name, _ in self._outputs]
        if isinstance(y, (list, tuple)) and len(y) == 1 and len(names) <= 1:
            (y,) = y
        if isinstance(y, (list, tuple)) and len(names) > 1:
            # The functional API's list of targets, in the outputs' order.
            if len(y) != len(names):
                raise InvalidDataError(
                    f"{what}: a list of {len(y)} targets; the model has "
                    f"{len(names)} outputs (" + ", ".join(names) + ")")
            y = dict(zip(names, y))
        if isinstance(y, dict) and len(y) == 1:
            (y,) = y.values()
        if isinstance(y, dict):
            # One array per output, named after it (the job checks the
            # names against the plan's outputs).
            for name, value in y.items():
                if names and name not in names:
                    raise InvalidDataError(
                        f"{what}: no output named '{name}'; the model's "
                        "outputs are " + ", ".join(f"'{n}'" for n in names))
                if name in arrays or name == "sample_weight":
                    raise InvalidDataError(
                        f"{what}: y['{name}'] has the name of an input")
                arrays[str(name)] = _array(value, f"{what} y['{name}']")
        else:
            arrays["y"] = _array(y, f"{what} y")
        sample_weight = _one_weight(sample_weight, names, what)
        if sample_weight is not None:
            # Keras' sample_weight: one weight per example, (N,) or (N, 1).
            arrays["sample_weight"] = _array(sample_weight,
                                             f"{what} sample_weight")
        lengths = {name: len(a) for name, a in arrays.items()}
        n = next(iter(lengths.values()))
        for name, m in lengths.items():
            if m != n:
                first = next(iter(lengths))
                raise InvalidDataError(
                    f"{what}: {first} holds {n} examples, {name} {m}: every "
                    "array needs one row per example")
        if n == 0:
            raise InvalidDataError(f"{what}: no examples")
        return arrays

    def _run(self, options, arrays, verbose, interruptible=False):
        options = dict(options)
        options.update(self._devices)
        options.setdefault("seed", self._seed)
        options.setdefault("batch_size", self._plan_batch)
        if not self._model.has_state and self._init_weights:
            options["init_weights"] = self._init_weights
        # The rate an earlier fit's ReduceLROnPlateau left: Keras' optimizer
        # keeps it.
        if self._learning_rate is not None:
            options.setdefault("learning_rate", self._learning_rate)
        # Ctrl-C: the job stops at a step boundary (its preemption signal)
        # and keeps that step's state; no checkpoint is needed.
        options["preempt_signals"] = "INT" if interruptible else "none"
        result = self._model.run(options, arrays, _verbose(verbose))
        if result["ok"]:
            return result
        if result["code"] == "cancelled":
            raise KeyboardInterrupt(
                f"training stopped at step {result['step']} (SIGINT); the "
                "trainer holds the weights of that step")
        raise from_result(result)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1,
            callbacks=None, validation_split=0.0, validation_data=None,
            shuffle=True, class_weight=None, sample_weight=None,
            initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Keras' Model.fit on NumPy arrays; returns a History."""
        if (steps_per_epoch is not None or validation_steps is not None or
                validation_freq != 1):
            raise UnsupportedError(
                "fit: steps_per_epoch, validation_steps and validation_freq "
                "are not supported (every epoch is one pass, validated at "
                "its end)")
        self._check_batch(batch_size, "fit")
        if validation_batch_size is not None and int(
                validation_batch_size) != self._plan_batch:
            raise UnsupportedError(
                f"fit: validation_batch_size={validation_batch_size}: the "
                f"validation runs in the training's batches of "
                f"{self._plan_batch}")
        epochs_to_run = int(epochs) - int(initial_epoch)
        if not 0 <= float(validation_split) < 1:
            raise InvalidDataError(
                f"fit: validation_split={validation_split}: a fraction in "
                "(0, 1)")
        arrays = {"train": self._pair(x, y, "fit", sample_weight)}
        # Keras' History.params: the batches an epoch are those of the
        # training rows, validation_split's taken off (floor, as Keras'
        # train_validation_split).
        examples = len(next(iter(arrays["train"].values())))
        if validation_split and validation_data is None:
            examples = int(math.floor(examples * (1.0 - validation_split)))
        params = {"verbose": verbose, "epochs": epochs,
                  "steps": -(-examples // self._plan_batch)}
        if epochs_to_run <= 0:
            # Keras runs no epoch (range(initial_epoch, epochs) is empty)
            # and returns an empty History.
            return History([], int(initial_epoch), {}, 0, False, params,
                           self._keras_model)
        options = {"data": "memory:train", "epochs": epochs_to_run,
                   "no_shuffle": not shuffle}
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError("fit: You cannot `class_weight` and "
                                 "`sample_weight` at the same time.")
            spec = _class_weight_spec(class_weight)
            if spec:
                options["class_weight"] = spec
        # Keras: "validation_data will override validation_split" (its fit
        # splits only when validation_data is None), silently.
        if validation_split and validation_data is None:
            options["validation_split"] = float(validation_split)
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(
                    validation_data) not in (2, 3):
                raise InvalidDataError(
                    "fit: validation_data is (x_val, y_val)")
            arrays["validation"] = self._pair(*validation_data[:2],
                                              "fit validation_data",
                                              *validation_data[2:])
            options["validation_data"] = "memory:validation"
        given = []
        for callback in callbacks or []:
            ours = callbacks_module.from_keras(callback)
            if ours.flag in options:
                raise ValueError(f"fit: two {type(ours).__name__} callbacks")
            options[ours.flag] = ours.value()
            given.append((callback, ours))
        # The callbacks number the epochs from it, as Keras' do.
        options["initial_epoch"] = int(initial_epoch)
        # A job without a state yet initializes the variables from the
        # seed: the trainer's own, whatever fits failed before.
        options["seed"] = _job_seed(
            self._seed, self._fits if self._model.has_state else 0)
        self._fits += 1
        # The job puts Python's SIGINT handler back itself, whatever ends it.
        result = self._run(options, arrays, verbose, interruptible=True)
        # The callback objects take the state Keras' would hold after this
        # fit, the job's callbacks' own.
        state = json.loads(result["callbacks"]) if result.get(
            "callbacks") else {}
        for callback, ours in given:
            ours.end(callback, state)
        if result.get("learning_rate") is not None:
            self._learning_rate = float(result["learning_rate"])
        # Keras' History of this fit: epochs from initial_epoch.
        return History(result["history"], int(initial_epoch),
                       result["timing"], result["steps"],
                       result["stopped_early"], params, self._keras_model)

    def evaluate(self, x=None, y=None, batch_size=None, verbose=0,
                 sample_weight=None, steps=None, callbacks=None,
                 return_dict=True):
        """Keras' Model.evaluate over every example (the last batch padded
        and its padding weighted 0): a dict of the loss and the metrics (or,
        return_dict=False, Keras' list)."""
        _no_steps_nor_callbacks("evaluate", steps, callbacks)
        self._check_batch(batch_size, "evaluate")
        arrays = {"eval": self._pair(x, y, "evaluate", sample_weight)}
        options = {"data": "memory:eval", "eval_data": "memory:eval",
                   "steps": 0, "eval": True, "no_shuffle": True}
        result = self._run(options, arrays, verbose)
        values = dict(result["evaluation"])
        if return_dict:
            return values
        # Keras' _flatten_metrics_in_order: its metrics' names first (the
        # loss, the compiled metrics' own names, each output's loss), then
        # every other log sorted. With one output the compiled metrics'
        # names are their logs', in the order the evaluation gives them;
        # with several the logs are "<output>_<name>", so only the losses
        # keep their place.
        names = [name for name, _ in self._outputs]
        if len(names) > 1:
            first = ["loss"] + [f"{n}_loss" for n in names]
            keys = [k for k in first if k in values]
            keys += sorted(k for k in values if k not in keys)
        else:
            keys = list(values)
        ordered = [values[k] for k in keys]
        return ordered[0] if len(ordered) == 1 else ordered

    def predict(self, x, batch_size=None, verbose=0, steps=None,
                callbacks=None):
        """Keras' Model.predict: the model's outputs for every example, in
        order, as a float32 array."""
        _no_steps_nor_callbacks("predict", steps, callbacks)
        self._check_batch(batch_size, "predict")
        arrays = {"predict": self._inputs(x, "predict x")}
        if len(next(iter(arrays["predict"].values()))) == 0:
            raise InvalidDataError("predict: no examples")
        result = self._run({"predict": "memory:predict"}, arrays, verbose)
        out = result["predictions"]
        # Each output's rows in the output's own shape; several outputs come
        # back as a list, in the model's order, as Keras' predict returns
        # a functional model's list of outputs.
        several = isinstance(out, list)
        outs = out if several else [out]
        for i, a in enumerate(outs):
            if i < len(self._outputs):
                shape = self._outputs[i][1]
                if shape and int(np.prod(shape)) == a.shape[1]:
                    outs[i] = a.reshape((a.shape[0],) + tuple(shape))
        if several and self._outputs_as_dict:
            # keras.Model(inputs, {"score": a, ...}): Keras' predict gives
            # the same dict.
            return {name: a for (name, _), a in zip(self._outputs, outs)}
        return outs if several else outs[0]

    def _check_batch(self, batch_size, what):
        if batch_size is None or int(batch_size) == self._plan_batch:
            return
        if int(batch_size) < 1:
            raise ValueError(f"{what}: batch_size={batch_size}: at least 1")
        if (not self._batch_given and self._compile_plan is not None
                and not self._model.has_state):
            # graphc.compile chose the batch and nothing has run: compile
            # for this one, as Keras' fit trains at the batch it is given.
            try:
                plan = self._compile_plan(int(batch_size))
            except ValueError as e:
                raise InvalidModelError(str(e)) from None
            self._load(plan)
            return
        how = ("was compiled for" if self._batch_given else
               "runs the batch of its first run,")
        raise ValueError(
            f"{what}: batch_size={batch_size}; the trainer {how} "
            f"{self._plan_batch}: a trainer keeps one batch size (give it "
            "with graphc.compile(..., batch_size=...))")

    # --- weights back to Keras ---------------------------------------------

    @property
    def step(self):
        """The optimizer's step (Keras' optimizer.iterations: with
        gradient_accumulation_steps k, the steps run // k)."""
        return self._model.step // self._accumulation

    def get_weights(self):
        """{name: array} of every variable: the model's weights ("<layer>/
        <weight>") and the optimizer's slots ("<layer>/<weight>/<slot>")."""
        if not self._model.has_state:
            raise InvalidModelError(
                "the trainer has not run yet: its weights are the model's "
                "(fit, evaluate or predict first)")
        return {name: value for name, _, value in self._model.variables()}

    def to_keras(self, model=None):
        """Sets the Keras model's weights to the trained ones (every weight,
        trainable or not, matched by its path), as model.set_weights would;
        returns the model."""
        model = model if model is not None else self._keras_model
        if model is None:
            model = self._rebuild()
        if not self._model.has_state:
            if self._keras_model is not None and model is self._keras_model:
                return model
            raise InvalidModelError(
                "the trainer has not run yet (fit, evaluate or predict first)")
        ours = self.get_weights()
        values = []
        for w in model.weights:
            path = getattr(w, "path", w.name)
            matches = [n for n in ours
                       if path == n or path.endswith("/" + n)]
            if not matches and _adapt_count(w):
                # Normalization.adapt()'s example count: no step reads or
                # changes it, so the plan has none; Keras' value stays.
                values.append(np.asarray(w.numpy() if hasattr(w, "numpy")
                                         else w))
                continue
            if not matches:
                raise InvalidModelError(
                    f"to_keras: the Keras model's weight '{path}' is not one "
                    "of the trainer's (another model?)")
            name = max(matches, key=len)
            value = ours[name]
            if tuple(value.shape) != tuple(w.shape):
                raise InvalidModelError(
                    f"to_keras: '{path}' is {tuple(w.shape)} in the Keras "
                    f"model, {tuple(value.shape)} in the trainer")
            values.append(value)
        model.set_weights(values)
        self._set_keras_optimizer(model, ours)
        return model

    def _set_keras_optimizer(self, model, ours):
        """The trained optimizer's state into the Keras model's compiled
        optimizer (iterations, the rate it trains at: an earlier fit's
        ReduceLROnPlateau left it, or graphc.compile's learning_rate= set
        it; the slots), in optimizer.variables' order, which Keras'
        files keep: a model saved after to_keras goes on in Keras' fit
        where the trainer stopped. Left as it is when the model has no
        optimizer, another one, or one whose state Keras keeps elsewhere
        (use_ema, gradient accumulation, loss scaling)."""
        optimizer = getattr(model, "optimizer", None)
        layout = self._model.keras_optimizer_layout()
        if optimizer is None or layout is None or not hasattr(
                optimizer, "build") or type(
                    optimizer).__name__ not in layout["classes"]:
            return
        if not getattr(optimizer, "built", False):
            optimizer.build(model.trainable_variables)
        variables = list(optimizer.variables)
        first = 2 if layout["rate_variable"] else 1
        if len(variables) != first + len(layout["slots"]) + len(
                layout["trailing"]) or any(name not in ours
                                           for name in layout["slots"]):
            return
        variables[0].assign(self.step)
        # The rate the trainer trains at: ReduceLROnPlateau's, else
        # graphc.compile's learning_rate= (the plan's, not the model's).
        rate = self._learning_rate
        if rate is None:
            rate = self._compiled_learning_rate
        if layout["rate_variable"] and rate is not None:
            variables[1].assign(rate)
        for variable, name in zip(variables[first:], layout["slots"]):
            variable.assign(ours[name])
        for variable, value in zip(
                variables[first + len(layout["slots"]):], layout["trailing"]):
            variable.assign(value)

    def _rebuild(self):
        import keras
        if self._source and str(self._source).endswith((".keras", ".h5")):
            return keras.saving.load_model(self._source, compile=True)
        if self._source:
            with open(self._source) as f:
                return keras.models.model_from_json(f.read())
        raise InvalidModelError("no Keras model to set the weights of")

    def save(self, filepath):
        """The trained model as Keras saves it: a .keras archive, a legacy
        .h5, or (.weights.h5) the weights alone, written by Keras itself."""
        filepath = str(filepath)
        model = self.to_keras()
        if filepath.endswith(".weights.h5"):
            model.save_weights(filepath)
        elif filepath.endswith((".keras", ".h5")):
            model.save(filepath)
        else:
            raise ValueError(f"save: {filepath}: a .keras, .h5 or .weights.h5 "
                             "file name")


def _is_hdf5(path):
    """Whether `path` is an HDF5 file (its signature, at offset 0)."""
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"\x89HDF\r\n\x1a\n"
    except OSError:
        return False


def _no_steps_nor_callbacks(what, steps, callbacks):
    if steps is not None or callbacks:
        raise UnsupportedError(
            f"{what}: steps and callbacks are not supported (every example "
            "is evaluated once; callbacks are fit's)")


def _adapt_count(weight):
    """Whether `weight` is the example count a preprocessing layer's adapt()
    keeps (Normalization's int32 scalar 'count')."""
    path = getattr(weight, "path", getattr(weight, "name", ""))
    return (path.endswith("/count") and not getattr(weight, "trainable", True)
            and "int" in str(getattr(weight, "dtype", ""))
            and tuple(weight.shape) == ())


def _with_loss_options(loss, saved):
    """`saved` (compile_config's loss, as get_compile_config() writes it)
    with the options of the live loss objects of `loss` (model.loss, of the
    same structure) that Keras 3 leaves out of their config: Huber's
    `delta`, CosineSimilarity's `axis` (their get_config drops the
    arguments they pass to the function they wrap, its _fn_kwargs)."""
    if isinstance(saved, dict) and isinstance(loss, dict):
        return {k: _with_loss_options(loss.get(k), v) for k, v in saved.items()}
    if isinstance(saved, list) and isinstance(loss, (list, tuple)) and len(
            saved) == len(loss):
        return [_with_loss_options(l, v) for l, v in zip(loss, saved)]
    options = getattr(loss, "_fn_kwargs", None)
    if not isinstance(saved, dict) or not isinstance(
            saved.get("config"), dict) or not isinstance(options, dict):
        return saved
    saved = dict(saved, config=dict(saved["config"]))
    for key, value in options.items():
        if isinstance(value, (tuple, np.ndarray, np.generic)):
            value = np.asarray(value).tolist()
        try:
            json.dumps(value)
        except TypeError:
            # Not a value a config holds: the importer names the loss's
            # missing option rather than guessing it.
            continue
        saved["config"].setdefault(key, value)
    return saved


def _input_layer_name(tensor):
    """The name of the InputLayer that makes Keras input `tensor` (the
    graph input graph-import names after it), else the tensor's own."""
    history = getattr(tensor, "_keras_history", None)
    layer = getattr(history, "operation", None)
    if layer is None and isinstance(history, tuple) and history:
        layer = history[0]
    return getattr(layer, "name", None) or tensor.name.split(":")[0]


def _signature(model):
    """A Keras model's inputs and outputs as the trainer names them:
    [(tensor name, InputLayer name)], [(output name, shape)], and whether
    its outputs are a dict (Keras' predict then returns one)."""
    input_names = [(t.name.split(":")[0], _input_layer_name(t))
                   for t in getattr(model, "inputs", None) or []]
    # keras.Model({"a": a, ...}, ...): fed by its dict's keys too.
    if isinstance(getattr(model, "input", None), dict):
        input_names += [(key, _input_layer_name(t))
                        for key, t in model.input.items()]
    # A dict of outputs is named by its keys, in their sorted order
    # (the order of model.outputs).
    outputs_as_dict = isinstance(getattr(model, "output", None), dict)
    try:
        names = list(getattr(model, "output_names", None) or [])
        if outputs_as_dict:
            names = sorted(model.output)
        shapes = [tuple(int(d) for d in t.shape[1:])
                  for t in model.outputs]
        if len(names) != len(shapes):
            names = [t.name.split(":")[0].split("/")[0]
                     for t in model.outputs]
        outputs = list(zip(names, shapes))
    except Exception:
        outputs = []
    return input_names, outputs, outputs_as_dict


def _file_signature(path):
    """_signature of the model a .keras or .json file holds, built by Keras
    from its config alone (the weights are not read): the plan names the
    outputs but keeps neither their shapes nor whether they were a dict,
    which predict gives back as Keras' does. Nothing where Keras cannot
    build it (not installed, a custom layer): the trainer then names the
    inputs and outputs as the plan does, and predict gives each output
    flat, (N, units)."""
    try:
        if path.endswith(".keras"):
            with zipfile.ZipFile(path) as archive:
                config = archive.read("config.json").decode()
        elif path.endswith(".json"):
            with open(path) as f:
                config = f.read()
        else:
            return [], [], False
        import keras
        return _signature(keras.models.model_from_json(config))
    except Exception:
        return [], [], False


def compile(model, batch_size=None, devices=None, seed=0, loss=None,
            optimizer=None, learning_rate=None, precision=None):
    """Compiles a Keras model for training: a live, compiled keras.Model, or
    a path to a .keras, .h5 or .json file. `devices`: "cpu", "cpu:N" (N
    replicas on CPU threads), "gpu" (every GPU) or "gpu:N"; default:
    graphrun's (every GPU, else one CPU replica). `batch_size` is the global
    batch (default: the model's fixed batch, else 32, as Keras' fit).
    `precision` ("float32", "mixed_bfloat16", "mixed_float16") replaces
    the dtype policy the model's layers carry (graphc --precision); by
    default a model built under keras.mixed_precision's mixed_bfloat16
    trains in it."""
    workdir = tempfile.TemporaryDirectory(prefix="graphc-")
    device_options, replicas = _devices(devices)
    keras_model, source, init_weights = None, None, None
    input_names, outputs, outputs_as_dict = [], [], False
    if isinstance(model, (str, os.PathLike)) and _is_hdf5(model):
        # Keras' legacy model.save("m.h5"): its config and compile() are
        # HDF5 attributes, which Keras reads; the model it gives is then
        # compiled as a live one.
        import keras
        path = os.fspath(model)
        try:
            model = keras.saving.load_model(path, compile=True)
        except Exception as e:
            raise InvalidModelError(
                f"{path}: Keras cannot load it as a model ({e}); a "
                ".weights.h5 file holds weights alone: compile the model "
                "and load them into it") from None
    if isinstance(model, (str, os.PathLike)):
        source = os.fspath(model)
        if not os.path.exists(source):
            raise InvalidModelError(f"{source}: no such file")
        text, is_path = source, True
        if source.endswith((".keras", ".h5")):
            init_weights = source
        input_names, outputs, outputs_as_dict = _file_signature(source)
    else:
        if not hasattr(model, "to_json") or not hasattr(model,
                                                        "get_compile_config"):
            raise InvalidModelError(
                f"compile: {type(model).__name__} is not a keras.Model nor a "
                "path")
        config = json.loads(model.to_json())
        if not getattr(model, "compiled", True) or not model.get_compile_config():
            raise InvalidModelError(
                "compile: the model is not compiled: call model.compile("
                "optimizer=..., loss=..., metrics=...) first")
        config["compile_config"] = model.get_compile_config()
        # The model's own dtype policy decides whether compile() wrapped its
        # optimizer in a LossScaleOptimizer; a Functional's config leaves
        # it out (a Sequential's has it).
        policy = getattr(getattr(model, "dtype_policy", None), "name", None)
        if isinstance(config.get("config"), dict) and isinstance(
                policy, str) and "dtype" not in config["config"]:
            config["config"]["dtype"] = policy
        config["compile_config"]["loss"] = _with_loss_options(
            getattr(model, "loss", None), config["compile_config"].get("loss"))
        text, is_path = json.dumps(config), False
        keras_model = model
        input_names, outputs, outputs_as_dict = _signature(model)
        # The model's own initial weights, Keras-initialized, are the
        # trainer's (as model_to_estimator starts from them).
        init_weights = os.path.join(workdir.name, "initial.weights.h5")
        model.save_weights(init_weights)
    counts = [replicas] if replicas and replicas not in (1, 2, 4, 8) else []

    def compile_plan(batch):
        return _graphc.compile_model(text, is_path, batch, loss, optimizer,
                                     learning_rate, counts, precision or "")

    try:
        plan = compile_plan(batch_size)
    except ValueError as e:
        raise InvalidModelError(str(e)) from None
    return Trainer(plan, keras_model, source, init_weights, batch_size,
                   device_options, workdir, input_names, outputs, seed,
                   outputs_as_dict, compile_plan, replicas, learning_rate)
