"""The seed Fashion-MNIST CNN trained by PyTorch, the peer of our benchmarks.

Same layers, NHWC input transposed to PyTorch's NCHW once per batch, Adam
0.001, cross-entropy on logits (what a softmax output with categorical
cross-entropy computes).

Throughput (the default; bench/cpu-train-vs-pytorch.sh and
bench/gpu-check.sh): synthetic data, prints images/s = batch / mean step
time after a warm-up, on one line. On a GPU each timed step ends with a
synchronisation, so the time is the device's.

Time to accuracy (--data-dir DIR with Fashion-MNIST's IDX files): trains in
shuffled epochs, evaluates on the test set every --eval-every steps and
prints, last, the wall seconds from start (torch.compile's compilation
included) to the first evaluation at or above --target-accuracy, or "not
reached".

--device cuda runs on the GPU (cudnn.benchmark on, fused Adam, TF32 unless
--precision fp32); --compile wraps the model in torch.compile (in
--compile-mode);
--channels-last keeps the model's weights and the input in PyTorch's
channels_last memory format (NHWC, oneDNN's layout on CPU).

--autocast bf16 runs the forward pass under torch.autocast(dtype=bfloat16)
(on CPU: PyTorch's mixed precision, bf16 convolutions and matrix products
on oneDNN, float32 weights and optimizer), as PyTorch's docs advise: the
backward pass outside the context.
"""
import argparse
import time

import torch
from torch import nn

import fashion_peers

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--batch", type=int, default=256)
parser.add_argument("--device", default="cpu", help="cpu or cuda")
parser.add_argument("--compile", action="store_true",
                    help="train the torch.compile'd model")
parser.add_argument("--compile-mode", default=None,
                    help="torch.compile's mode (bench/gpu-check.sh: "
                    "max-autotune, which also replays CUDA graphs)")
parser.add_argument("--precision", default="tf32", choices=["fp32", "tf32"],
                    help="on a GPU: the convolutions' and matrix products' "
                    "float32 mode, as graphrun --precision")
parser.add_argument("--channels-last", action="store_true",
                    help="weights and input in channels_last memory format")
parser.add_argument("--autocast", default=None, choices=["bf16"],
                    help="forward pass under torch.autocast in bfloat16")
parser.add_argument("--data-dir", default=None,
                    help="Fashion-MNIST IDX files: time to --target-accuracy")
parser.add_argument("--target-accuracy", type=float, default=0.90)
parser.add_argument("--eval-every", type=int, default=100)
parser.add_argument("--max-epochs", type=int, default=15)
args = parser.parse_args()

start = time.perf_counter()
torch.manual_seed(0)
device = torch.device(args.device)
if device.type == "cpu":
    torch.set_num_threads(2)  # what bench/cpu-train-vs-pytorch.sh compares
else:
    # How PyTorch's GPU users run: cuDNN autotuning (cudnn.benchmark) and
    # the precision graphrun uses (TF32 is cuDNN's default for convolutions
    # already; matrix products need asking).
    torch.backends.cudnn.benchmark = True
    tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
model = fashion_peers.torch_seed_cnn(nn).to(device)
memory_format = (torch.channels_last if args.channels_last
                 else torch.contiguous_format)
model = model.to(memory_format=memory_format)
# On a GPU, Adam's fused kernel: one launch for every parameter.
optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7,
                             fused=device.type == "cuda")
loss_fn = nn.CrossEntropyLoss()
forward = (torch.compile(model, mode=args.compile_mode) if args.compile
           else model)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_step(images, labels):
    x = images.permute(0, 3, 1, 2).contiguous(memory_format=memory_format)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device.type, dtype=torch.bfloat16,
                        enabled=args.autocast == "bf16"):
        loss = loss_fn(forward(x), labels)
    loss.backward()
    optimizer.step()
    return loss


def read_idx(path):
    data, shape, offset = fashion_peers.read_idx(path)
    return torch.frombuffer(data, dtype=torch.uint8,
                            offset=offset).reshape(shape)


def load(split):
    images_path, labels_path = fashion_peers.split_files(args.data_dir, split)
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    x = (images.float() / 255.0).unsqueeze(-1)
    return x.to(device), labels.long().to(device)


if args.data_dir is None:
    images = torch.rand(args.batch, 28, 28, 1, device=device)
    labels = torch.randint(0, 10, (args.batch,), device=device)
    times = []
    for step in range(args.warmup + args.steps):
        begin = time.perf_counter()
        train_step(images, labels)
        sync()
        if step >= args.warmup:
            times.append(time.perf_counter() - begin)
    print(f"{args.batch / (sum(times) / len(times)):.1f}")
else:
    train_x, train_y = load("train")
    test_x, test_y = load("test")

    def accuracy():
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_x), 1000):
                x = test_x[i:i + 1000].permute(0, 3, 1, 2).contiguous()
                correct += (forward(x).argmax(1) == test_y[i:i + 1000]).sum().item()
        model.train()
        return correct / len(test_x)

    step = 0
    result = "not reached"
    generator = torch.Generator(device="cpu").manual_seed(0)
    for epoch in range(args.max_epochs):
        order = torch.randperm(len(train_x), generator=generator).to(device)
        for i in range(0, len(train_x) - args.batch + 1, args.batch):
            rows = order[i:i + args.batch]
            train_step(train_x[rows], train_y[rows])
            step += 1
            if step % args.eval_every == 0:
                acc = accuracy()
                if acc >= args.target_accuracy:
                    result = f"{time.perf_counter() - start:.1f}"
                    print(f"step {step}: test accuracy {acc:.4f}")
                    break
        if result != "not reached":
            break
    print(result)
