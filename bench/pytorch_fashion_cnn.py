"""The seed Fashion-MNIST CNN trained by PyTorch eager on synthetic data.

The peer for bench/cpu-train-vs-pytorch.sh: same layers, NHWC input
transposed to PyTorch's NCHW once per batch, Adam 0.001, global batch 256,
cross-entropy on logits (what a softmax output with categorical
cross-entropy computes). Prints images/s = batch / mean step time after a
warm-up, on one line.
"""
import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--batch", type=int, default=256)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(2)
model = nn.Sequential(
    nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
    nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
    nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Flatten(),
    nn.Linear(576, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()
images = torch.rand(args.batch, 28, 28, 1)
labels = torch.randint(0, 10, (args.batch,))

times = []
for step in range(args.warmup + args.steps):
    start = time.perf_counter()
    x = images.permute(0, 3, 1, 2).contiguous()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), labels)
    loss.backward()
    optimizer.step()
    if step >= args.warmup:
        times.append(time.perf_counter() - start)
print(f"{args.batch / (sum(times) / len(times)):.1f}")
