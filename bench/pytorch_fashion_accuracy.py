"""The seed Fashion-MNIST CNN trained by PyTorch eager on CPU, epoch by epoch,
with the whole test set evaluated after each: the PyTorch peer of
bench/cpu-accuracy-vs-peers.sh (bench/pytorch_fashion_cnn.py measures
throughput and time to a target instead).

Made to match bench/keras_fashion_cnn.py: the same layers, Keras's
initialisers (Glorot uniform weights, zero biases), Adam(lr=0.001,
eps=1e-7: Keras's epsilon), cross-entropy on logits (what Keras's softmax
output with categorical cross-entropy computes), the real Fashion-MNIST IDX
files from --data-dir (pixels / 255.0 as float32), the whole training set
shuffled afresh every epoch into batches of 256, the last partial batch
dropped (234 steps an epoch). The model and its inputs are channels_last
(NHWC in memory, as the data and oneDNN's fast paths are);
torch.set_num_threads(--threads, default 2).

For a fair run, start it as bench/cpu-accuracy-vs-peers.sh does, with
glibc's malloc kept from returning big buffers to the system (it has to be
set before the process starts):

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
      OMP_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_fashion_accuracy.py

Prints one JSON line per epoch, the same fields as the Keras peer:

    {"framework": "pytorch", "epoch": 1, "test_accuracy": 0.85,
     "test_loss": 0.41, "train_seconds_so_far": 18.0,
     "wall_seconds_so_far": 18.6, "images_per_sec": 3300.0}

train_seconds_so_far is the wall-clock time since the first training step
began, the evaluations left out; wall_seconds_so_far includes them.
images_per_sec is this epoch's training images over its training seconds.
"""
import argparse
import json
import sys
import time

import torch
from torch import nn

import fashion_peers

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--batch", type=int, default=256)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
parser.add_argument("--eval-batch", type=int, default=1000)
args = parser.parse_args()

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)


def read_idx(path):
    data, shape, offset = fashion_peers.read_idx(path)
    return torch.frombuffer(data, dtype=torch.uint8,
                            offset=offset).reshape(shape)


def load(split):
    images_path, labels_path = fashion_peers.split_files(args.data_dir, split)
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    # NHWC in memory, seen as NCHW: a channels_last tensor.
    x = (images.float() / 255.0).unsqueeze(-1).permute(0, 3, 1, 2)
    return x, labels.long()


model = fashion_peers.torch_seed_cnn(nn).to(memory_format=torch.channels_last)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()

train_x, train_y = load("train")
test_x, test_y = load("test")


def batch_input(x):
    return x.contiguous(memory_format=torch.channels_last)


def evaluate():
    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for i in range(0, len(test_x), args.eval_batch):
            logits = model(batch_input(test_x[i:i + args.eval_batch]))
            labels = test_y[i:i + args.eval_batch]
            loss_sum += loss_fn(logits, labels).item() * len(labels)
            correct += (logits.argmax(1) == labels).sum().item()
    model.train()
    return correct / len(test_x), loss_sum / len(test_x)


print(f"pytorch_fashion_accuracy: torch {torch.__version__}, "
      f"{torch.get_num_threads()} threads, batch {args.batch}, "
      f"{len(train_x) // args.batch} steps an epoch, seed {args.seed}",
      file=sys.stderr)
generator = torch.Generator().manual_seed(args.seed)
steps_per_epoch = len(train_x) // args.batch
start = time.perf_counter()
eval_seconds = 0.0
last_train = 0.0
for epoch in range(args.epochs):
    order = torch.randperm(len(train_x), generator=generator)
    for i in range(0, steps_per_epoch * args.batch, args.batch):
        rows = order[i:i + args.batch]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(batch_input(train_x[rows])), train_y[rows])
        loss.backward()
        optimizer.step()
    train_so_far = time.perf_counter() - start - eval_seconds
    epoch_seconds = train_so_far - last_train
    last_train = train_so_far
    begin = time.perf_counter()
    accuracy, test_loss = evaluate()
    eval_seconds += time.perf_counter() - begin
    print(json.dumps({
        "framework": "pytorch",
        "epoch": epoch + 1,
        "test_accuracy": round(accuracy, 6),
        "test_loss": round(test_loss, 6),
        "train_seconds_so_far": round(train_so_far, 3),
        "wall_seconds_so_far": round(time.perf_counter() - start, 3),
        "images_per_sec": round(steps_per_epoch * args.batch / epoch_seconds, 1),
    }), flush=True)
