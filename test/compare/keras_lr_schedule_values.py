"""Keras' own learning-rate schedules against the plans graphc makes of them.

    keras_lr_schedule_values.py --graph-import G --graphc C \
        --rates plan-learning-rates --work DIR [--steps 20]

For each schedule below, real Keras 3 compiles a small model with it and
writes the model's JSON (compile_config included); graph-import and graphc
turn it into a plan, and plan-learning-rates prints the rate the update
kernels use at iterations 0..steps-1. Two oracles:

- Keras' formula (keras/src/optimizers/schedules/learning_rate_schedule.py,
  transcribed below in float64 from the arguments Keras' get_config holds):
  within 1e-7 relative (the arguments travel as float32, graph-import's
  rounding, so not to the last bit);
- the schedule object's own value, which Keras computes in float32,
  rounding after every operation (its numpy backend converts every operand
  to float32): near the end of a cosine, 1 + cos(pi * t) cancels and
  Keras' float32 value is itself up to ~1e-6 from its formula's, so the
  bound is 2e-6 relative. Both worst differences are printed.
"""

import argparse
import math
import os
import subprocess
import sys

import keras
import numpy as np

S = keras.optimizers.schedules
# name: (class, keyword arguments).
SCHEDULES = {
    # Keras' own warm-up example (the CosineDecay docstring), scaled down.
    "cosine_warmup_from_0": (S.CosineDecay, dict(
        initial_learning_rate=0.0, decay_steps=10, warmup_target=0.1,
        warmup_steps=5)),
    "cosine_warmup_alpha": (S.CosineDecay, dict(
        initial_learning_rate=0.01, decay_steps=8, alpha=0.1,
        warmup_target=0.05, warmup_steps=4)),
    "cosine_restarts": (S.CosineDecayRestarts, dict(
        initial_learning_rate=0.1, first_decay_steps=3, t_mul=2.0, m_mul=0.8,
        alpha=0.05)),
    "cosine_restarts_t1": (S.CosineDecayRestarts, dict(
        initial_learning_rate=0.05, first_decay_steps=4, t_mul=1.0,
        m_mul=0.5)),
    "cosine_restarts_defaults": (S.CosineDecayRestarts, dict(
        initial_learning_rate=0.02, first_decay_steps=5)),
    "polynomial_cycle": (S.PolynomialDecay, dict(
        initial_learning_rate=0.1, decay_steps=6, end_learning_rate=0.01,
        power=2.0, cycle=True)),
    "polynomial_no_cycle": (S.PolynomialDecay, dict(
        initial_learning_rate=0.1, decay_steps=6, end_learning_rate=0.01,
        power=0.5)),
}


def keras_formula(cls, kw, step):
    """Keras' __call__ of `cls` with arguments `kw` at `step`, in float64."""
    if cls is S.CosineDecay:
        decay_steps, alpha = kw["decay_steps"], kw.get("alpha", 0.0)
        initial = kw["initial_learning_rate"]

        def decay(t, start):
            t = min(t, decay_steps)
            cosine = 0.5 * (1.0 + math.cos(math.pi * t / decay_steps))
            return ((1 - alpha) * cosine + alpha) * start

        if kw.get("warmup_target") is None:
            return decay(step, initial)
        target, warmup = kw["warmup_target"], kw["warmup_steps"]
        step = min(step, decay_steps + warmup)
        if step < warmup:
            return (target - initial) * (step / warmup) + initial
        return decay(step - warmup, target)
    if cls is S.CosineDecayRestarts:
        first, alpha = kw["first_decay_steps"], kw.get("alpha", 0.0)
        t_mul, m_mul = kw.get("t_mul", 2.0), kw.get("m_mul", 1.0)
        fraction = step / first
        if t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            restart = math.floor(
                math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            done = (1.0 - t_mul ** restart) / (1.0 - t_mul)
            fraction = (fraction - done) / t_mul ** restart
        cosine = 0.5 * m_mul ** restart * (1.0 + math.cos(math.pi * fraction))
        return kw["initial_learning_rate"] * ((1 - alpha) * cosine + alpha)
    if cls is S.PolynomialDecay:
        initial, end = kw["initial_learning_rate"], kw["end_learning_rate"]
        decay_steps, power = kw["decay_steps"], kw.get("power", 1.0)
        if kw.get("cycle"):
            multiplier = 1.0 if step == 0 else math.ceil(step / decay_steps)
            decay_steps = decay_steps * multiplier
        else:
            step = min(step, decay_steps)
        return (initial - end) * (1 - step / decay_steps) ** power + end
    raise ValueError(cls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph-import", required=True)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--rates", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    worst, worst_own = 0.0, 0.0
    for name, (cls, kwargs) in SCHEDULES.items():
        schedule = cls(**kwargs)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(keras.optimizers.SGD(schedule), "mse")
        base = os.path.join(a.work, name)
        with open(base + ".json", "w") as f:
            f.write(model.to_json())
        subprocess.run([a.graph_import, base + ".json", "--batch-size", "8",
                        "-o", base + ".mlir"], check=True)
        subprocess.run([a.graphc, base + ".mlir", "-o", base + ".plan"],
                       check=True)
        out = subprocess.run([a.rates, base + ".plan", str(a.steps)],
                             check=True, capture_output=True, text=True).stdout
        ours = [float(line.split()[1]) for line in out.splitlines()]
        def relative(o, t):
            return abs(o - t) / abs(t) if t != 0 else abs(o)

        for step, o in enumerate(ours):
            formula = keras_formula(cls, kwargs, float(step))
            own = float(np.asarray(schedule(step)))
            e1, e2 = relative(o, formula), relative(o, own)
            worst, worst_own = max(worst, e1), max(worst_own, e2)
            if e1 > 1e-7 or e2 > 2e-6:
                print(f"FAIL: {name} at step {step}: ours {o!r}, Keras' "
                      f"formula {formula!r} ({e1:.2e}), Keras' float32 {own!r} "
                      f"({e2:.2e})")
                sys.exit(1)
        print(f"{name}: {a.steps} steps equal Keras' formula within 1e-7 and "
              f"its float32 values within 2e-6")
    print(f"worst relative difference: {worst:.1e} from Keras' formula, "
          f"{worst_own:.1e} from its float32 values")
    print("ok")


if __name__ == "__main__":
    main()
