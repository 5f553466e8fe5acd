"""One training step of the seed CNN in PyTorch, compared with graphrun's.

An independent implementation of examples/fashion_mnist_cnn.json (Keras:
Conv2D(32, 3, relu), MaxPooling2D(2), Conv2D(64, 3, relu), MaxPooling2D(2),
Conv2D(64, 3, relu), Flatten, Dense(64, relu), Dense(10, softmax);
categorical cross-entropy; Adam(0.001, epsilon=1e-7)) written with torch.nn
modules in PyTorch's layouts (NCHW, OIHW kernels, [out, in] dense weights):

  torch_one_step.py init INIT.safetensors
      draws initial weights (Glorot uniform kernels, zero biases, as Keras)
      and writes them in Keras' names and layouts for graphrun --init-weights.
  torch_one_step.py compare INIT AFTER METRICS --data-dir DIR
      runs one step from INIT on the first 256 training examples in file
      order (graphrun --no-shuffle --steps 1), then compares every updated
      weight with AFTER (graphrun --save-weights) and the step's loss with
      METRICS (graphrun --metrics). Exits 1 if any differs beyond tolerance.

PyTorch computes in float64, from the float32 initial weights and inputs,
and its updated weights are rounded to float32 as graphrun stores them, so
that PyTorch's own rounding stays out of the comparison: graphrun's reference
kernels accumulate in double, PyTorch's float32 CPU kernels in float (a
conv2d bias gradient sums 173056 products), and Adam's first step amplifies
a gradient's absolute error where |g| is near epsilon / sqrt(1 - beta_2) ~
3.2e-6 (the step is lr * g / (|g| + 3.2e-6), whose slope there is up to
lr / 3.2e-6 ~ 300). Measured on this batch: float32 PyTorch differs from
graphrun by up to 4.8e-4 (conv2d/bias, whose smallest gradient is 5.6e-6),
float64 PyTorch by up to 1.5e-5.

Tolerances:
  weights: max|torch - graphrun| / max|graphrun| <= 1e-4 per tensor: above
    the 1.5e-5 that float32 storage of graphrun's intermediate tensors
    leaves, far below what a wrong gradient, layout, sign or bias correction
    produces (one weight moved the wrong way is off by 2 * lr = 2e-3, i.e.
    2e-3 / max|w| >= 5e-3 relative on kernels and 2 on biases).
  loss: |torch - graphrun| <= 1e-6 * |torch| (graphrun logs 9 significant
    digits and computes from float32 logits; measured 5e-8).
"""

import argparse
import gzip
import json
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import read as read_safetensors
from safetensors_io import write as write_safetensors

BATCH = 256
LEARNING_RATE = 0.001
BETA_1, BETA_2, EPSILON = 0.9, 0.999, 1e-7
WEIGHT_TOLERANCE = 1e-4
LOSS_TOLERANCE = 1e-6


# --- the model in PyTorch's layouts, and the Keras names and layouts.

class SeedCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv2d = torch.nn.Conv2d(1, 32, 3)
        self.conv2d_1 = torch.nn.Conv2d(32, 64, 3)
        self.conv2d_2 = torch.nn.Conv2d(64, 64, 3)
        self.dense = torch.nn.Linear(576, 64)
        self.dense_1 = torch.nn.Linear(64, 10)

    def forward(self, x_nhwc):
        x = x_nhwc.permute(0, 3, 1, 2)  # NHWC -> NCHW
        x = F.max_pool2d(F.relu(self.conv2d(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2d_1(x)), 2)
        x = F.relu(self.conv2d_2(x))
        # Keras flattens NHWC: (h, w, c) order, not PyTorch's (c, h, w).
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        x = F.relu(self.dense(x))
        return self.dense_1(x)  # logits; the softmax is in the loss


def to_keras(model):
    """The weights as Keras names them, in Keras' layouts."""
    out = {}
    for layer in ("conv2d", "conv2d_1", "conv2d_2", "dense", "dense_1"):
        module = getattr(model, layer)
        w = module.weight.detach().numpy()
        # OIHW -> HWIO; [out, in] -> [in, out].
        out[f"{layer}/kernel"] = (w.transpose(2, 3, 1, 0) if w.ndim == 4
                                  else w.T)
        out[f"{layer}/bias"] = module.bias.detach().numpy()
    # Rounded to float32, as graphrun stores its variables.
    return {k: np.ascontiguousarray(v, dtype=np.float32)
            for k, v in out.items()}


def from_keras(model, tensors):
    with torch.no_grad():
        for layer in ("conv2d", "conv2d_1", "conv2d_2", "dense", "dense_1"):
            module = getattr(model, layer)
            k = tensors[f"{layer}/kernel"]
            k = k.transpose(3, 2, 0, 1) if k.ndim == 4 else k.T
            module.weight.copy_(torch.from_numpy(np.ascontiguousarray(k)))
            module.bias.copy_(torch.from_numpy(tensors[f"{layer}/bias"]))


def glorot_uniform(shape_keras, generator):
    """Keras' GlorotUniform: fans from an HWIO or [in, out] shape."""
    receptive = int(np.prod(shape_keras[:-2])) if len(shape_keras) > 2 else 1
    fan_in, fan_out = shape_keras[-2] * receptive, shape_keras[-1] * receptive
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return generator.uniform(-limit, limit, shape_keras).astype(np.float32)


def initial_weights(seed):
    generator = np.random.default_rng(seed)
    shapes = {"conv2d": (3, 3, 1, 32), "conv2d_1": (3, 3, 32, 64),
              "conv2d_2": (3, 3, 64, 64), "dense": (576, 64),
              "dense_1": (64, 10)}
    out = {}
    for layer, shape in shapes.items():
        out[f"{layer}/kernel"] = glorot_uniform(shape, generator)
        out[f"{layer}/bias"] = np.zeros(shape[-1], np.float32)
    return out


# --- data: the IDX files, read directly.

def read_idx(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", blob[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob[4 + 4 * ndim:], np.uint8).reshape(dims)


def first_batch(data_dir):
    images = read_idx(f"{data_dir}/train-images-idx3-ubyte.gz")[:BATCH]
    labels = read_idx(f"{data_dir}/train-labels-idx1-ubyte.gz")[:BATCH]
    x = images.astype(np.float32)[..., None] / np.float32(255)
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


# --- one step: forward, backward, Adam as Keras 3 writes it.

def adam_first_step(parameters):
    """Keras 3's Adam at t = 1 from zero slots, on each parameter from its
    .grad: epsilon is added to sqrt(v) with the bias correction folded into
    alpha, not to sqrt(v_hat) as in torch.optim.Adam (graphrun's
    optimizer_update kernel does the same)."""
    t = 1
    alpha = LEARNING_RATE * np.sqrt(1 - BETA_2 ** t) / (1 - BETA_1 ** t)
    with torch.no_grad():
        for p in parameters:
            m = (1 - BETA_1) * p.grad
            v = (1 - BETA_2) * p.grad * p.grad
            p.sub_(alpha * m / (v.sqrt() + EPSILON))


def one_step(init, x, y, dtype, device="cpu"):
    """The weights (Keras' names and layouts) after one step from `init` on
    (x, y), computed in `dtype` on `device`, and the step's loss."""
    model = SeedCnn().to(dtype)
    from_keras(model, init)
    model.to(device)
    loss = F.cross_entropy(model(x.to(device, dtype)), y.to(device))
    loss.backward()
    adam_first_step(model.parameters())
    return to_keras(model.cpu()), loss.item()


def peer_step(args, init, x, y):
    """PyTorch's own float32 step on --peer-device in --peer-precision."""
    tf32 = args.peer_precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    return one_step(init, x, y, torch.float32, args.peer_device)[0]


def compare(args):
    init = read_safetensors(args.init)
    after = read_safetensors(args.after)
    x, y = first_batch(args.data_dir)
    mine, loss = one_step(init, x, y, torch.float64)
    peer = peer_step(args, init, x, y) if args.peer_device else None

    failed = False
    if sorted(mine) != sorted(after):
        print(f"tensors differ: torch {sorted(mine)}, graphrun {sorted(after)}")
        failed = True
    for name in sorted(mine):
        if name not in after:
            continue
        a, b = mine[name], after[name]
        if a.shape != b.shape:
            print(f"{name}: shape {a.shape} (torch) vs {b.shape} (graphrun)")
            failed = True
            continue
        moved = np.abs(b - init[name]).max()
        error = np.abs(a - b).max() / np.abs(b).max()
        limit, theirs = args.weight_tolerance, ""
        if peer is not None:
            # PyTorch's own float32 step in the same precision, measured
            # against the same float64 step: where its error exceeds the
            # tolerance, ours may be as far off as twice its.
            peer_error = np.abs(a - peer[name]).max() / np.abs(b).max()
            limit = max(limit, 2 * peer_error)
            theirs = f", PyTorch {args.peer_precision} {peer_error:.2e}"
        ok = error <= limit
        failed |= not ok
        print(f"{name}: max|torch - graphrun| / max|graphrun| = {error:.2e} "
              f"(moved {moved:.2e}{theirs}) {'ok' if ok else 'MISMATCH'}")

    with open(args.metrics) as f:
        steps = [json.loads(line) for line in f if '"step": 1,' in line]
    theirs = steps[0]["loss"]
    error = abs(loss - theirs) / abs(loss)
    ok = error <= args.loss_tolerance
    failed |= not ok
    print(f"loss: torch {loss:.7f}, graphrun {theirs:.7f}, relative "
          f"difference {error:.2e} {'ok' if ok else 'MISMATCH'}")
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init", help="write initial weights (Keras layout)")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("compare", help="one step in torch vs graphrun")
    p.add_argument("init")
    p.add_argument("after")
    p.add_argument("metrics")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    # A GPU step in TF32 (10-bit mantissa products) is compared at 1e-2:
    # bench/gpu-check.sh passes --weight-tolerance 1e-2 --loss-tolerance 1e-3.
    p.add_argument("--weight-tolerance", type=float, default=WEIGHT_TOLERANCE)
    p.add_argument("--loss-tolerance", type=float, default=LOSS_TOLERANCE)
    p.add_argument("--peer-device", default=None,
                   help="also run PyTorch's own float32 step there (cuda) "
                   "and allow each weight twice its error")
    p.add_argument("--peer-precision", default="fp32",
                   choices=["fp32", "tf32"])
    args = parser.parse_args()
    if args.command == "init":
        write_safetensors(args.out, initial_weights(args.seed))
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
