"""bench/keras_resnet_small.py's ResNet in PyTorch: the peer of
bench/cpu-resnet-vs-pytorch.sh.

Same layers (3x3 convolutions without bias, batch norm with Keras' epsilon
1e-3 and momentum 0.99, projection shortcuts, global average pooling,
Dense(10)), Adam 0.001 (epsilon 1e-7, Keras'), cross-entropy on logits.
Tuned as its best users run it on CPU: channels_last, set_num_threads(2)
(glibc's malloc thresholds come from the calling script's environment).
Synthetic data; prints images/s = batch / mean step time after --warmup
steps, on one line.
"""
import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(args.threads)


def bn(c):
    # Keras' BatchNormalization: epsilon 1e-3, moving average momentum 0.99.
    return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = bn(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, 0, bias=False), bn(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        s = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(y + s)


layers = [nn.Conv2d(3, 32, 3, 1, 1, bias=False), bn(32), nn.ReLU()]
cin = 32
for cout, stride in [(32, 1), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1)]:
    layers.append(Block(cin, cout, stride))
    cin = cout
layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)]
model = nn.Sequential(*layers).to(memory_format=torch.channels_last)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()

images = torch.rand(args.batch, 3, 32, 32).contiguous(
    memory_format=torch.channels_last)
labels = torch.randint(0, 10, (args.batch,))
times = []
for step in range(args.warmup + args.steps):
    begin = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    if step >= args.warmup:
        times.append(time.perf_counter() - begin)
print(f"{args.batch / (sum(times) / len(times)):.1f}")
