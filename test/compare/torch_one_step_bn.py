"""One training step of a BatchNormalization CNN in PyTorch, vs graphrun's.

An independent implementation of Inputs/fashion_mnist_bn_cnn.json (Keras 3:
Conv2D(32, 3) - BatchNormalization - relu - MaxPooling2D(2) - Conv2D(64, 3)
- BatchNormalization - relu - MaxPooling2D(2) - Conv2D(64, 3, relu) -
Flatten - Dense(64) - BatchNormalization - relu - Dense(10, softmax);
categorical cross-entropy; Adam(0.001, epsilon=1e-7); BatchNormalization
momentum 0.99, epsilon 1e-3) in PyTorch's layouts, at 1 or 2 replicas:

  torch_one_step_bn.py init INIT.safetensors [--seed S]
      writes initial variables as Keras initialises them (Glorot uniform
      kernels, zero biases and betas, gamma ones, moving mean zeros,
      moving variance ones) in Keras' names and layouts. --seed defaults
      to 1; see "the seed" below.
  torch_one_step_bn.py compare INIT AFTER METRICS --replicas R
      runs one step from INIT on the first 256 training examples in file
      order (graphrun --no-shuffle --steps 1) and compares every variable of
      AFTER (graphrun --save-weights) and the step's loss (graphrun
      --metrics) with it. Exits 1 if one differs beyond its limit, if a
      self-check fails, or if a wrong reference (below) would pass.

The convolution and the dense layer in front of a BatchNormalization have no
bias (use_bias false, as such Keras models are written): the batch mean
takes it out, so its gradient is exactly zero and Adam's first step would
turn that zero's rounding noise r into lr * r / (|r| + 3.2e-6), a step no
tolerance can compare.

What the step is (Keras 3, and TF's in-graph replication for R = 2):
replica r takes rows [128 r, 128 r + 128); each replica normalises with its
own rows' batch mean and biased batch variance (keras.ops.moments), y =
gamma (x - mean) / sqrt(var + epsilon) + beta, and takes the mean loss over
its rows; the gradient is the mean over replicas of theirs, and so is the
reported loss; each replica updates the moving statistics, moving * 0.99 +
batch * 0.01 with the biased batch variance (Keras 3; tf.keras 2 took the
unbiased one), and what is kept is the mean of the replicas' updates (TF's
ON_READ/MEAN aggregation). PyTorch computes in float64 from the float32
initial variables and inputs; its results are rounded to float32, as
graphrun stores them.

Self-checks, without graphrun: the written-out normalisation against
F.batch_norm(training=True) (loss 1e-14, gradients 5e-13); the batch
statistics against F.batch_norm's running statistics (which take the
unbiased variance: ours times n / (n - 1)); Keras' Adam (epsilon added to
sqrt(v), the bias corrections folded into the learning rate, as in
keras/src/optimizers/adam.py and torch_one_step.py) against
torch.optim.Adam, which adds epsilon to sqrt(v_hat): the same update with
eps = 1e-7 / sqrt(1 - beta_2) at the first step (2e-16).

Limits, per tensor, ||graphrun - torch||_2 / ||torch||_2:
  trainable variables: 1e-4. A norm, not each element: Adam's first step
    is lr * g / (|g| + 3.2e-6), whose slope lr * 3.2e-6 / (|g| + 3.2e-6)^2
    turns a float32-sized error in a gradient |g| ~ 1e-5 into a visible
    error in that element's step; over the tensor it weighs as little as
    the element does. The biases and betas start at zero, so there they
    are measured against the step itself (~lr per element), with no weight
    to dilute them: the seed below keeps their gradients away from 3.2e-6.
    Measured: float32 PyTorch (--float32) 4.6e-7 at worst, graphrun's
    reference backend (double sums over float32 tensors) 6.3e-8.
  moving statistics: of the step's part, x - 0.99 * init, with one float32
    spacing of the stored value per element added to the limit. A moving
    variance is stored as 0.99 + 0.01 * var: its whole value hides the batch
    variance a hundredfold (the unbiased variance moves batch_normalization
    _2's by 1.3e-5, far inside 1e-4; its step part by 3.9e-3), and where var
    is small (batch_normalization: 0.0015 to 0.024) one spacing of the
    stored value, 6e-8, is up to 4e-3 of the step part: the limit there is
    7.0e-4 (1.2e-4 for the other two layers; 1e-4 for the moving means,
    which start at zero). Measured: float32 PyTorch 3.4e-4 at worst (on
    batch_normalization's variance, under half its limit), the reference
    backend 1.1e-4.
    Keras 3's biased and tf.keras 2's unbiased batch variance differ by
    1 / (n - 1): 5.8e-6 and 3.2e-5 for the convolutions' n = 173056 and
    30976 values per channel, under any float32 limit; only
    batch_normalization_2 (n = 256, or 128 a replica) tells them apart.
  loss: |graphrun - torch| / torch <= 1e-5. Measured: float32 PyTorch
    5.4e-8, the reference backend 3.1e-8; the nearest wrong reference
    moves it by 4.7e-4 (below).

The seed. With zero biases and betas, a seed whose gradients put one of
their elements near 3.2e-6 fails a correct float32 implementation: seeds 0
to 11, float32 PyTorch against float64 at 1 and 2 replicas: seeds 2 and 11
beyond 1e-4 (3.4e-4 and 5.2e-4, conv2d_2/bias), seed 0 at 8.4e-5. Seed 1:
4.6e-7 at worst, and no such gradient under 31 * 3.2e-6.

The max pools make the gradient a discontinuous function of the forward
pass: on this batch the two largest values of a pooling window come within
1.5e-7 of the layer's standard deviation (58 windows within 1e-5). An
implementation whose batch statistics are off by more than ~1e-6 relative
routes some windows' gradients to the other element, which moves the
gradients of the layers below by ~0.5% each time: float32 with accurate
sums (PyTorch's, the reference backend's, ~1e-7) passes, batch statistics
off by 1e-4 do not.

Wrong references: how far each is from the right one, in the same measure
(the worst tensor's error over its limit; at 1 / 2 replicas), printed by
compare, which fails if one is within its limits:
  Adam's step with the wrong sign                2e4 / 2e4
  Adam without the bias correction               2.2e4 / 2.2e4
  torch.optim.Adam(eps=1e-7)                     40 / 38
  the unbiased variance in the moving variance   33 / 67
  normalising with the unbiased variance         3.8 / 5.2 (loss 60 / 120)
  the other replica count's batch statistics     7.9e3 / 7.9e3 (loss 47)
  replica 0's moving statistics, not the mean    - / 828
  gradients summed over replicas, not averaged   - / 19
"""

import argparse
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import read as read_safetensors
from safetensors_io import write as write_safetensors
from torch_one_step import (BATCH, BETA_1, BETA_2, EPSILON, LEARNING_RATE,
                            adam_first_step, first_batch, glorot_uniform)

MOMENTUM, BN_EPSILON = 0.99, 1e-3
TOLERANCE = 1e-4
LOSS_TOLERANCE = 1e-5

# Keras shapes (HWIO, [in, out]) of the kernels; which layers have a bias.
KERNELS = {"conv2d": (3, 3, 1, 32), "conv2d_1": (3, 3, 32, 64),
           "conv2d_2": (3, 3, 64, 64), "dense": (576, 64),
           "dense_1": (64, 10)}
BIASED = ("conv2d_2", "dense_1")
NORMS = {"batch_normalization": 32, "batch_normalization_1": 64,
         "batch_normalization_2": 64}
MOVING = ("moving_mean", "moving_variance")


# --- the model in PyTorch's layouts, and the Keras names and layouts.

class KerasBatchNorm(torch.nn.Module):
    """Keras 3's BatchNormalization in training mode over axis 1 (NCHW or
    NC): the batch mean and the biased batch variance (ops.moments). Each
    call records its batch statistics and how many values each channel
    had; the moving statistics are updated outside, from those."""

    def __init__(self, channels):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(channels))
        self.beta = torch.nn.Parameter(torch.zeros(channels))
        self.register_buffer("moving_mean", torch.zeros(channels))
        self.register_buffer("moving_variance", torch.ones(channels))
        self.use_torch = False  # F.batch_norm instead, for the self-check
        self.unbiased = False  # a wrong reference: the unbiased variance
        self.calls = []
        self.torch_running = []

    def forward(self, x):
        axes = [0] + list(range(2, x.dim()))
        shape = [1, -1] + [1] * (x.dim() - 2)
        mean = x.mean(axes)
        var = ((x - mean.view(shape)) ** 2).mean(axes)
        count = x.numel() // x.shape[1]
        self.calls.append((mean.detach(), var.detach(), count))
        if self.use_torch:
            running = (self.moving_mean.clone(), self.moving_variance.clone())
            self.torch_running.append(running)
            return F.batch_norm(x, *running, self.gamma, self.beta,
                                training=True, momentum=1 - MOMENTUM,
                                eps=BN_EPSILON)
        if self.unbiased:
            var = var * count / (count - 1)
        x_hat = (x - mean.view(shape)) / torch.sqrt(var.view(shape)
                                                    + BN_EPSILON)
        return x_hat * self.gamma.view(shape) + self.beta.view(shape)


class BnCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv2d = torch.nn.Conv2d(1, 32, 3, bias=False)
        self.batch_normalization = KerasBatchNorm(32)
        self.conv2d_1 = torch.nn.Conv2d(32, 64, 3, bias=False)
        self.batch_normalization_1 = KerasBatchNorm(64)
        self.conv2d_2 = torch.nn.Conv2d(64, 64, 3)
        self.dense = torch.nn.Linear(576, 64, bias=False)
        self.batch_normalization_2 = KerasBatchNorm(64)
        self.dense_1 = torch.nn.Linear(64, 10)

    def forward(self, x_nhwc):
        x = x_nhwc.permute(0, 3, 1, 2)  # NHWC -> NCHW
        x = F.max_pool2d(F.relu(self.batch_normalization(self.conv2d(x))), 2)
        x = F.max_pool2d(
            F.relu(self.batch_normalization_1(self.conv2d_1(x))), 2)
        x = F.relu(self.conv2d_2(x))
        # Keras flattens NHWC: (h, w, c) order, not PyTorch's (c, h, w).
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        x = F.relu(self.batch_normalization_2(self.dense(x)))
        return self.dense_1(x)  # logits; the softmax is in the loss

    def norms(self):
        return {name: getattr(self, name) for name in NORMS}


def to_keras(model):
    """The variables as Keras names them, in Keras' layouts, rounded to
    float32 as graphrun stores them."""
    out = {}
    for layer in KERNELS:
        module = getattr(model, layer)
        w = module.weight.detach().numpy()
        # OIHW -> HWIO; [out, in] -> [in, out].
        out[f"{layer}/kernel"] = (w.transpose(2, 3, 1, 0) if w.ndim == 4
                                  else w.T)
        if layer in BIASED:
            out[f"{layer}/bias"] = module.bias.detach().numpy()
    for name, bn in model.norms().items():
        for v in ("gamma", "beta") + MOVING:
            out[f"{name}/{v}"] = getattr(bn, v).detach().numpy()
    return {k: np.ascontiguousarray(v, dtype=np.float32)
            for k, v in out.items()}


def from_keras(model, tensors):
    with torch.no_grad():
        for layer in KERNELS:
            module = getattr(model, layer)
            k = tensors[f"{layer}/kernel"]
            k = k.transpose(3, 2, 0, 1) if k.ndim == 4 else k.T
            module.weight.copy_(torch.from_numpy(np.ascontiguousarray(k)))
            if layer in BIASED:
                module.bias.copy_(torch.from_numpy(tensors[f"{layer}/bias"]))
        for name, bn in model.norms().items():
            for v in ("gamma", "beta") + MOVING:
                getattr(bn, v).copy_(torch.from_numpy(tensors[f"{name}/{v}"]))


def initial_weights(seed):
    """Keras' initializers: Glorot uniform kernels, zero biases, gamma ones,
    beta zeros, moving mean zeros, moving variance ones."""
    generator = np.random.default_rng(seed)
    out = {}
    for layer, shape in KERNELS.items():
        out[f"{layer}/kernel"] = glorot_uniform(shape, generator)
        if layer in BIASED:
            out[f"{layer}/bias"] = np.zeros(shape[-1], np.float32)
    for name, channels in NORMS.items():
        out[f"{name}/gamma"] = np.ones(channels, np.float32)
        out[f"{name}/beta"] = np.zeros(channels, np.float32)
        out[f"{name}/moving_mean"] = np.zeros(channels, np.float32)
        out[f"{name}/moving_variance"] = np.ones(channels, np.float32)
    return out


# --- one step at R replicas.

class Step:
    """The forward and backward pass of one step from `init` on the global
    batch (x, y) split into `replicas` slices of consecutive rows, as
    graphrun's in-graph replication does (replica r gets rows [r * 256 / R,
    (r + 1) * 256 / R)): each replica normalises with its own slice's batch
    statistics and takes the mean loss over its rows; the loss and the
    gradient are the means over replicas. Keeps the loss, the gradients and
    each replica's batch statistics; updated() applies them."""

    def __init__(self, init, x, y, replicas, dtype=torch.float64,
                 torch_bn=False, unbiased=False):
        model = BnCnn().to(dtype)
        from_keras(model, init)
        for bn in model.norms().values():
            bn.use_torch, bn.unbiased = torch_bn, unbiased
        rows = BATCH // replicas
        slices = [slice(r * rows, (r + 1) * rows) for r in range(replicas)]
        losses = [F.cross_entropy(model(x[s].to(dtype)), y[s])
                  for s in slices]
        loss = sum(losses) / replicas
        loss.backward()
        self.dtype = dtype
        self.loss = loss.item()
        self.grads = {n: p.grad.detach() for n, p in model.named_parameters()}
        # Per layer, per replica: (batch mean, biased batch variance, count).
        self.stats = {name: bn.calls
                      for name, bn in model.norms().items()}
        self.torch_running = {name: bn.torch_running
                              for name, bn in model.norms().items()}


def updated(init, step, adam="keras", torch_adam_epsilon=None,
            unbiased=False, replica0_stats=False, grad_scale=1):
    """The variables after `step`: Adam on the trainable ones; the moving
    statistics as moving * momentum + batch * (1 - momentum) from each
    replica's batch statistics (the biased variance, Keras 3's rule), then
    the mean over replicas (TF's ON_READ/MEAN aggregation of a variable
    that each replica updates). The other arguments make the self-check's
    torch.optim.Adam and the wrong references."""
    model = BnCnn().to(step.dtype)
    from_keras(model, init)
    params = dict(model.named_parameters())
    for name, p in params.items():
        p.grad = step.grads[name] * grad_scale
    params = list(params.values())
    before = [p.detach().clone() for p in params]
    with torch.no_grad():
        if torch_adam_epsilon is not None:  # added to sqrt(v_hat)
            torch.optim.Adam(params, lr=LEARNING_RATE, betas=(BETA_1, BETA_2),
                             eps=torch_adam_epsilon).step()
        elif adam == "no-bias-correction":  # alpha = lr
            for p in params:
                m = (1 - BETA_1) * p.grad
                v = (1 - BETA_2) * p.grad * p.grad
                p.sub_(LEARNING_RATE * m / (v.sqrt() + EPSILON))
        else:
            adam_first_step(params)
            if adam == "wrong-sign":  # w0 - s becomes w0 + s
                for p, p0 in zip(params, before):
                    p.copy_(2 * p0 - p)
        for name, bn in model.norms().items():
            new = []
            for mean, var, n in step.stats[name]:
                if unbiased:
                    var = var * n / (n - 1)
                new.append((MOMENTUM * bn.moving_mean + (1 - MOMENTUM) * mean,
                            MOMENTUM * bn.moving_variance
                            + (1 - MOMENTUM) * var))
            if replica0_stats:
                new = new[:1]
            bn.moving_mean.copy_(sum(m for m, _ in new) / len(new))
            bn.moving_variance.copy_(sum(v for _, v in new) / len(new))
    return model


# --- the comparison.

def distance(name, a, b, init):
    """(error, limit) of graphrun's `a` against PyTorch's `b`: ||a - b|| /
    ||b|| over the tensor, within TOLERANCE. For a moving statistic, both
    norms are of the step's part, x - momentum * init, and the limit adds
    one float32 spacing of the stored value per element (the docstring says
    why)."""
    limit = TOLERANCE
    a, b = a.astype(np.float64), b.astype(np.float64)
    if name.endswith(MOVING):
        base = MOMENTUM * init.astype(np.float64)
        spacing = np.spacing(np.abs(b).astype(np.float32)).astype(np.float64)
        a, b = a - base, b - base
        limit += np.linalg.norm(spacing) / max(np.linalg.norm(b), 1e-30)
    error = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
    return float(error), float(limit)


def norm_distance(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b)) / max(float(np.linalg.norm(b)), 1e-30)


def relative(a, b):
    return abs(a - b) / abs(b)


def self_check(init, x, y, replicas, step, right):
    """The PyTorch side against PyTorch's own BatchNorm and Adam, with no
    graphrun in it. Returns whether every check passed."""
    ok_all = True

    def report(what, error, limit):
        nonlocal ok_all
        ok = error <= limit
        ok_all &= ok
        print(f"self-check: {what}: {error:.1e} {'ok' if ok else 'FAIL'}")

    # The forward and the backward with F.batch_norm(training=True) in place
    # of the written-out normalisation.
    theirs = Step(init, x, y, replicas, torch_bn=True)
    report("loss with F.batch_norm", relative(theirs.loss, step.loss), 1e-12)
    report("gradients with F.batch_norm (worst tensor)",
           max(norm_distance(theirs.grads[n], g)
               for n, g in step.grads.items()), 1e-10)
    # F.batch_norm's running statistics, which take the unbiased variance:
    # the same mean, and our biased variance times n / (n - 1).
    worst = 0.0
    for name, calls in step.stats.items():
        mm, mv = (torch.from_numpy(init[f"{name}/{v}"]).double()
                  for v in MOVING)
        for (mean, var, n), (rm, rv) in zip(calls, theirs.torch_running[name]):
            unbiased = var * n / (n - 1)
            worst = max(worst,
                        norm_distance(rm, MOMENTUM * mm
                                      + (1 - MOMENTUM) * mean),
                        norm_distance(rv, MOMENTUM * mv
                                      + (1 - MOMENTUM) * unbiased))
    report("batch statistics vs F.batch_norm's running statistics", worst,
           1e-12)
    # Keras' Adam adds epsilon to sqrt(v) and folds the bias corrections into
    # the learning rate: torch.optim.Adam's update with epsilon / sqrt(1 -
    # beta_2^t) added to sqrt(v_hat), t = 1.
    adam = updated(init, step,
                   torch_adam_epsilon=EPSILON / np.sqrt(1 - BETA_2))
    report("Keras' Adam vs torch.optim.Adam(eps=1e-7/sqrt(1-beta_2))",
           max(norm_distance(p.detach(), q.detach())
               for p, q in zip(adam.parameters(), right.parameters())), 1e-12)
    return ok_all


def wrong_references(init, x, y, replicas, step, mine):
    """References that a wrong graphrun could match: how far each is from
    the right one, in the comparison's own measure (the worst tensor's
    error / limit). Returns whether the comparison tells every one apart."""
    other = 2 if replicas == 1 else 1
    variants = [
        ("Adam step with the wrong sign", step, {"adam": "wrong-sign"}),
        ("Adam without bias correction", step,
         {"adam": "no-bias-correction"}),
        ("torch.optim.Adam(eps=1e-7): epsilon on sqrt(v_hat)", step,
         {"torch_adam_epsilon": EPSILON}),
        ("the unbiased batch variance in the moving variance", step,
         {"unbiased": True}),
        ("normalising with the unbiased batch variance",
         Step(init, x, y, replicas, unbiased=True), {}),
        ("statistics of each half batch (2 replicas' BatchNorm)"
         if replicas == 1 else
         "statistics of the global batch (a synchronized BatchNorm)",
         Step(init, x, y, other), {}),
    ]
    if replicas > 1:
        variants += [
            ("replica 0's moving statistics, not the mean", step,
             {"replica0_stats": True}),
            ("gradients summed over replicas, not averaged", step,
             {"grad_scale": replicas})]
    all_told = True
    for what, s, kwargs in variants:
        wrong = to_keras(updated(init, s, **kwargs))
        ratio, name, error = max(
            (e / l, n, e) for n in mine
            for e, l in [distance(n, wrong[n], mine[n], init[n])])
        loss_ratio = relative(s.loss, step.loss) / LOSS_TOLERANCE
        told = ratio > 1 or loss_ratio > 1
        all_told &= told
        print(f"wrong reference, {what}: worst {name} {error:.1e} "
              f"({ratio:.3g}x its limit), loss {loss_ratio:.3g}x its limit: "
              f"{'told apart' if told else 'NOT TOLD APART'}")
    return all_told


def compare(args):
    init = read_safetensors(args.init)
    after = read_safetensors(args.after)
    x, y = first_batch(args.data_dir)
    dtype = torch.float32 if args.float32 else torch.float64
    step = Step(init, x, y, args.replicas, dtype=dtype)
    right = updated(init, step)
    mine = to_keras(right)

    failed = False
    if not args.float32:
        failed |= not self_check(init, x, y, args.replicas, step, right)

    print(f"replicas: {args.replicas}")
    if sorted(mine) != sorted(after):
        print(f"tensors differ: torch {sorted(mine)}, "
              f"graphrun {sorted(after)}")
        failed = True
    for name in sorted(mine):
        if name not in after:
            continue
        a, b = after[name], mine[name]
        if a.shape != b.shape:
            print(f"{name}: shape {a.shape} (graphrun) vs {b.shape} (torch) "
                  "FAIL")
            failed = True
            continue
        error, limit = distance(name, a, b, init[name])
        ok = error <= limit
        failed |= not ok
        print(f"{name}: {error:.2e} (limit {limit:.1e}) "
              f"{'ok' if ok else 'FAIL'}")

    with open(args.metrics) as f:
        steps = [json.loads(line) for line in f if '"step": 1,' in line]
    theirs = steps[0]["loss"]
    error = relative(theirs, step.loss)
    ok = error <= LOSS_TOLERANCE
    failed |= not ok
    print(f"loss: torch {step.loss:.8f}, graphrun {theirs:.8f}, relative "
          f"difference {error:.2e} (limit {LOSS_TOLERANCE:.0e}) "
          f"{'ok' if ok else 'FAIL'}")
    if not args.float32:
        failed |= not wrong_references(init, x, y, args.replicas, step, mine)
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init", help="write initial variables (Keras layout)")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("compare", help="one step in torch vs graphrun")
    p.add_argument("init")
    p.add_argument("after")
    p.add_argument("metrics")
    p.add_argument("--replicas", type=int, choices=(1, 2), required=True)
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--float32", action="store_true",
                   help="PyTorch in float32 (to measure what float32 "
                        "rounding alone does; not for the test)")
    args = parser.parse_args()
    if args.command == "init":
        write_safetensors(args.out, initial_weights(args.seed))
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
