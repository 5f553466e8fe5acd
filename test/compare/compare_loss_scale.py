"""Compares graphrun's dynamic loss scale with Keras' LossScaleOptimizer.

  compare_loss_scale.py metrics.jsonl loss_scale.json [--checkpoint C]

metrics.jsonl is graphrun's --metrics file with --log-every 1: each
training step's line carries "loss_scale", the scale after the step.
loss_scale.json (keras_mixed_precision.py) holds Keras' dynamic_scale after
each batch ("batches") and its state after fit. Each step's scale must
equal Keras' exactly (a skipped step halves it, 2 finite ones in a row
double it: a different overflow decision shows here as a different
power of two); with --checkpoint, the checkpoint's optimizer/dynamic_scale,
optimizer/step_counter and optimizer/iterations must equal Keras'
dynamic_scale, step_counter and iterations after fit. Prints each and
PASSED or FAILED (exit status 1).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read as read_safetensors  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("keras")
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    with open(args.metrics) as f:
        steps = [json.loads(line) for line in f if line.strip()]
    steps = [s for s in steps if not s.get("eval") and "step" in s]
    with open(args.keras) as f:
        keras = json.load(f)
    batches = keras["batches"]
    failed = 0
    if len(steps) != len(batches):
        print("%d steps logged, Keras ran %d batches" % (len(steps),
                                                         len(batches)))
        failed += 1
    for step, batch in zip(steps, batches):
        got, want = step.get("loss_scale"), batch["dynamic_scale"]
        ok = got == want
        failed += 0 if ok else 1
        print("step %d loss scale: %s vs Keras %g %s" %
              (step["step"], got, want, "ok" if ok else "FAILED"))
    if args.checkpoint:
        state = read_safetensors(args.checkpoint)
        for ours, theirs in (("optimizer/dynamic_scale", "dynamic_scale"),
                             ("optimizer/step_counter", "step_counter"),
                             ("optimizer/iterations", "iterations")):
            got = float(state[ours].reshape(-1)[0]) if ours in state else None
            ok = got == float(keras[theirs])
            failed += 0 if ok else 1
            print("%s: %s vs Keras %s %g %s" %
                  (ours, got, theirs, keras[theirs], "ok" if ok else "FAILED"))
    print("PASSED" if not failed else "FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
