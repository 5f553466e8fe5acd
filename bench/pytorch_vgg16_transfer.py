"""The seed's VGG16 transfer-learning step trained by PyTorch, the peer of
bench/vgg16-transfer.sh.

examples/vgg16_oct.json by hand (torchvision-free): VGG16's 13 3x3
convolutions with ReLU and 5 max-pools, Flatten, Dense(4, softmax); blocks
1-4 frozen (requires_grad False, so autograd computes no weight gradient
for them and no input gradient below block5_conv1), Adam 0.001 on block5
and the head. Input 224x224x3, batch 32, synthetic data, channels_last
(oneDNN's preferred layout for convolutions on CPU), 2 threads.

Flatten follows Keras' NHWC order: the head's input is the pooled
activation permuted to NHWC before flattening, so the two models compute
the same function (the permute is a copy of 32x7x7x512 floats, noise
against a step).

--autocast bf16 runs the forward pass under torch.autocast("cpu",
dtype=torch.bfloat16): bf16 convolutions and matrix products on oneDNN,
float32 weights and Adam (PyTorch's CPU mixed precision).

Prints the mean step time in seconds and images/s, after a warm-up, on one
line: "<seconds> <images/s>".
"""
import argparse
import time

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--warmup", type=int, default=1)
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--size", type=int, default=224)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--autocast", default=None, choices=["bf16"],
                    help="forward pass under torch.autocast in bfloat16")
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(args.threads)

# (block, [filters of each conv]) as keras.applications.VGG16.
BLOCKS = [(1, [64, 64]), (2, [128, 128]), (3, [256, 256, 256]),
          (4, [512, 512, 512]), (5, [512, 512, 512])]
FROZEN_BLOCKS = {1, 2, 3, 4}


class Vgg16Transfer(nn.Module):
    def __init__(self, size, classes=4):
        super().__init__()
        layers = []
        channels = 3
        for block, filters in BLOCKS:
            for f in filters:
                conv = nn.Conv2d(channels, f, 3, padding=1)
                conv.requires_grad_(block not in FROZEN_BLOCKS)
                layers += [conv, nn.ReLU(inplace=True)]
                channels = f
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        side = size // 32
        self.head = nn.Linear(side * side * channels, classes)

    def forward(self, x):
        x = self.features(x)
        x = x.permute(0, 2, 3, 1).flatten(1)  # Keras' NHWC Flatten
        return self.head(x)


model = Vgg16Transfer(args.size).to(memory_format=torch.channels_last)
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.Adam(trainable, lr=0.001, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()

images = torch.rand(args.batch, 3, args.size, args.size).to(
    memory_format=torch.channels_last)
labels = torch.randint(0, 4, (args.batch,))


def train_step():
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16,
                        enabled=args.autocast == "bf16"):
        loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss


times = []
for step in range(args.warmup + args.steps):
    begin = time.perf_counter()
    train_step()
    if step >= args.warmup:
        times.append(time.perf_counter() - begin)
mean = sum(times) / len(times)
print(f"{mean:.4f} {args.batch / mean:.2f}")
