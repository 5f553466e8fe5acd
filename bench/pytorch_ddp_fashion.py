"""The seed Fashion-MNIST CNN trained by PyTorch DistributedDataParallel on
CPU (gloo): the multi-worker peer of graphrun's replicas (--cpus N).

Same model and recipe as bench/pytorch_fashion_accuracy.py: Conv2D 32 3x3
relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, Flatten,
Dense 64 relu, Dense 10 (softmax with categorical cross-entropy, computed as
cross-entropy on logits); Keras's initialisers (Glorot uniform kernels, zero
biases); Adam(lr=0.001, eps=1e-7); model and inputs channels_last. 93,322
parameters.

W worker processes (--workers), each with torch.set_num_threads(T)
(--threads, default 1), train one DDP replica each. The GLOBAL batch
(--global-batch, default 256) is split evenly: every step each rank takes its
own 256/W images of the same global batch (a manual shard, as
DistributedSampler would), and DDP averages the gradients with one gloo
all-reduce (the model's 373 KB of gradients fit DDP's first 1 MB bucket), so
a step is the single-process step on the global batch.

Launch. The script launches itself: it spawns the W workers with
torch.multiprocessing.spawn (a fresh interpreter per rank), rendezvous
MASTER_ADDR=127.0.0.1 and a free port, GLOO_SOCKET_IFNAME=lo. Before
spawning it sets the fair-baseline environment of shared/BUILD-NOTES.md in
the workers' environment, so one command is a fair run:

    MALLOC_MMAP_THRESHOLD_=4294967296  MALLOC_TRIM_THRESHOLD_=4294967296
    OMP_NUM_THREADS=T                  GLOO_SOCKET_IFNAME=lo (unless set)

(glibc reads the MALLOC_ variables when a process starts: they take effect
because every rank is a new process started after they are set.)

    /usr/bin/python3 bench/pytorch_ddp_fashion.py --workers 2 --threads 1

It also runs under torchrun (detected from RANK/WORLD_SIZE in the
environment); then torchrun starts the processes and the CALLER must set the
environment above, e.g.

    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
      OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo torchrun --standalone \\
      --nproc_per_node 2 --redirects 1 --tee 1 \\
      bench/pytorch_ddp_fashion.py --threads 1

(--redirects 1 --tee 1 is needed: Debian's torchrun 1.13 on Python 3.11
fails with "AttributeError: 'NoneType' object has no attribute 'get'" for
the default --redirects 0, since Std.from_str("0") finds no member by
iterating the IntFlag; with it, rank 0's stdout comes back prefixed
"[default0]:".)

Data: --data synthetic (default: random images and labels fixed by --seed,
made in memory, no I/O) or --data fashion_mnist (the IDX .gz files in
--data-dir, read with numpy; every epoch a fresh permutation shared by all
ranks, as DistributedSampler.set_epoch does, the last partial batch dropped).

Measurement: --warmup steps, then a barrier, --steps timed steps, a barrier;
rank 0's wall time between the barriers over --steps is step_ms (the job's
time: DDP's all-reduce synchronises the ranks every step, and the closing
barrier waits for the slowest), images_per_sec = global batch / step_ms.
Fetching a step's batch (an index gather for fashion_mnist) is inside the
timed region, as in bench/pytorch_fashion_accuracy.py. allreduce_ms is then
measured apart: the mean of --allreduce-iters dist.all_reduce calls on a
93,322-float tensor (the size of all gradients) after 5 untimed ones, between
barriers (0 work to do for one worker, but still gloo's call). With
--hook-timing, DDP's all-reduce is done by a Python comm hook that records,
for each bucket, the time from its launch to its completion (the
communication left exposed after backward, with one bucket): reported as
ddp_allreduce_ms, mean per step over the timed steps. It includes waiting
for the slowest rank to finish its backward, so it is the exposed
synchronisation, not the wire time (the Python hook costs a little; leave it
off for throughput figures).

Teardown: after the last barrier every rank leaves with os._exit(0),
skipping destroy_process_group and the destructors: PyTorch 1.13's
ProcessGroupGloo destructor (run when DDP's Reducer is freed) can deadlock
against a gloo worker thread waiting for the GIL, which left a rank spinning
after the JSON was printed.

Prints one JSON line on rank 0 (stdout); details go to stderr:

    {"framework": "pytorch-ddp-gloo", "workers": 2, "threads": 1,
     "global_batch": 256, "images_per_sec": ..., "step_ms": ...,
     "allreduce_ms": ..., ...}
"""
import argparse
import json
import os
import socket
import sys
import time

import fashion_peers

FAIR_MALLOC = "4294967296"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2,
                   help="processes to spawn (ignored under torchrun)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads per process")
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--data", choices=("synthetic", "fashion_mnist"),
                   default="synthetic")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--synthetic-batches", type=int, default=8,
                   help="distinct synthetic global batches, cycled")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--allreduce-iters", type=int, default=50,
                   help="timed all_reduce calls for allreduce_ms (0: skip)")
    p.add_argument("--hook-timing", action="store_true",
                   help="time DDP's own all-reduce with a Python comm hook")
    p.add_argument("--pin", action="store_true",
                   help="pin rank r to CPUs [r*T, (r+1)*T) mod the CPU count")
    p.add_argument("--port", type=int, default=0,
                   help="rendezvous port (0: a free one)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before a stuck collective fails")
    args = p.parse_args(argv)
    if args.threads < 1 or args.steps < 1 or args.warmup < 0:
        p.error("--threads and --steps must be >= 1, --warmup >= 0")
    return args


def log(rank, msg):
    if rank == 0:
        print(f"pytorch_ddp_fashion: {msg}", file=sys.stderr, flush=True)


def read_idx(path):
    import numpy as np
    data, shape, offset = fashion_peers.read_idx(path)
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(shape)


def load_fashion_train(data_dir):
    import numpy as np
    images_path, labels_path = fashion_peers.split_files(data_dir, "train")
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    x = (images.astype(np.float32) / np.float32(255.0))[:, :, :, None]  # NHWC
    return x, labels.astype(np.int64)


def build_model(torch, nn):
    model = fashion_peers.torch_seed_cnn(nn)
    return model.to(memory_format=torch.channels_last)


def worker(rank, world, args, init_method):
    import torch
    import torch.distributed as dist
    from datetime import timedelta
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    if args.pin:
        ncpu = os.cpu_count() or 1
        os.sched_setaffinity(0, {(rank * args.threads + i) % ncpu
                                 for i in range(args.threads)})
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=init_method, rank=rank,
                            world_size=world,
                            timeout=timedelta(seconds=args.timeout))
    gb = args.global_batch
    if gb % world:
        raise SystemExit(f"global batch {gb} is not divisible by {world} workers")
    lb = gb // world
    lo, hi = rank * lb, (rank + 1) * lb  # this rank's rows of a global batch

    torch.manual_seed(args.seed)  # same init everywhere (DDP broadcasts rank 0's)
    model = build_model(torch, nn)
    n_params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()  # mean over the local batch; DDP averages

    hook_ms = []
    if args.hook_timing:
        def timed_allreduce(state, bucket):
            begin = time.perf_counter()
            buf = bucket.buffer().div_(world)
            fut = dist.all_reduce(buf, async_op=True).get_future()

            def done(f):
                hook_ms.append((time.perf_counter() - begin) * 1e3)
                return f.value()[0]
            return fut.then(done)
        ddp.register_comm_hook(None, timed_allreduce)

    def to_input(x_nhwc):
        # NHWC in memory seen as NCHW: a channels_last tensor.
        return x_nhwc.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)

    if args.data == "synthetic":
        g = torch.Generator().manual_seed(args.seed + 1)
        batches = []
        for _ in range(max(1, args.synthetic_batches)):
            x = torch.rand(gb, 28, 28, 1, generator=g)
            y = torch.randint(0, 10, (gb,), generator=g)
            batches.append((to_input(x[lo:hi]), y[lo:hi].contiguous()))

        def get_batch(step):
            return batches[step % len(batches)]
        data_desc = f"synthetic, {len(batches)} global batches cycled"
    else:
        x_np, y_np = load_fashion_train(args.data_dir)
        train_x, train_y = torch.from_numpy(x_np), torch.from_numpy(y_np)
        steps_per_epoch = len(train_x) // gb
        orders = {}

        def get_batch(step):
            epoch, i = divmod(step, steps_per_epoch)
            if epoch not in orders:  # the same permutation on every rank
                orders.clear()
                orders[epoch] = torch.randperm(
                    len(train_x),
                    generator=torch.Generator().manual_seed(args.seed + epoch))
            rows = orders[epoch][i * gb + lo:i * gb + hi]
            return to_input(train_x[rows]), train_y[rows]
        data_desc = (f"fashion_mnist {args.data_dir}, {len(train_x)} images, "
                     f"{steps_per_epoch} steps an epoch")

    log(rank, f"torch {torch.__version__}, gloo, {world} workers x "
              f"{torch.get_num_threads()} threads, global batch {gb} "
              f"({lb} per worker), {n_params} parameters, {data_desc}; "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} "
              f"MALLOC_MMAP_THRESHOLD_={os.environ.get('MALLOC_MMAP_THRESHOLD_')} "
              f"MALLOC_TRIM_THRESHOLD_={os.environ.get('MALLOC_TRIM_THRESHOLD_')} "
              f"GLOO_SOCKET_IFNAME={os.environ.get('GLOO_SOCKET_IFNAME')}")

    def train_step(step):
        x, y = get_batch(step)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for step in range(args.warmup):
        train_step(step)
    hook_ms.clear()
    dist.barrier()
    begin = time.perf_counter()
    for step in range(args.warmup, args.warmup + args.steps):
        loss = train_step(step)
    dist.barrier()
    step_s = (time.perf_counter() - begin) / args.steps
    # The last step's loss on the global batch (the ranks' means, averaged).
    final_loss = loss.detach().clone()
    dist.all_reduce(final_loss)
    final_loss = final_loss.item() / world

    allreduce_ms = None
    if args.allreduce_iters > 0:
        grads = torch.ones(n_params)
        for _ in range(5):
            dist.all_reduce(grads)
        dist.barrier()
        begin = time.perf_counter()
        for _ in range(args.allreduce_iters):
            dist.all_reduce(grads)
        dist.barrier()
        allreduce_ms = (time.perf_counter() - begin) * 1e3 / args.allreduce_iters

    # Replicas must still agree: a cheap check that DDP did its job.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    spread = flat.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    low = flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    max_param_diff = (spread - low).abs().max().item()

    if rank == 0:
        result = {
            "framework": "pytorch-ddp-gloo",
            "workers": world,
            "threads": args.threads,
            "global_batch": gb,
            "images_per_sec": round(gb / step_s, 1),
            "step_ms": round(step_s * 1e3, 3),
            "allreduce_ms": None if allreduce_ms is None else round(allreduce_ms, 4),
        }
        if args.hook_timing:
            per_step = sum(hook_ms) / args.steps
            result["ddp_allreduce_ms"] = round(per_step, 4)
        result.update({
            "data": args.data,
            "steps": args.steps,
            "warmup": args.warmup,
            "last_loss": round(final_loss, 5),
            "replica_max_param_diff": max_param_diff,
            "torch": torch.__version__,
        })
        print(json.dumps(result), flush=True)
    # Leave without tearing down: in PyTorch 1.13, destroying the DDP
    # Reducer (and with it ProcessGroupGloo) at exit can deadlock -- the
    # destructor joins a gloo worker thread, under the GIL, while that
    # thread waits for the GIL to free a tensor -- and leave a rank hung
    # forever after the result is printed (seen here). Everything is done
    # once every rank has passed this barrier.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    args = parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        # Started by torchrun: it made the processes, the caller the environment.
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if rank == 0:
            missing = [k for k, v in (("MALLOC_MMAP_THRESHOLD_", FAIR_MALLOC),
                                      ("MALLOC_TRIM_THRESHOLD_", FAIR_MALLOC),
                                      ("OMP_NUM_THREADS", str(args.threads)))
                       if os.environ.get(k) != v]
            if missing:
                log(0, "warning: not the fair-baseline environment under "
                       f"torchrun (set before launching): {', '.join(missing)}")
        worker(rank, world, args, "env://")
        return

    if args.workers < 1 or args.global_batch % args.workers:
        raise SystemExit(f"--workers must be >= 1 and divide the global "
                         f"batch {args.global_batch}")
    # The workers' environment: fixed before they start (see the docstring).
    os.environ["MALLOC_MMAP_THRESHOLD_"] = FAIR_MALLOC
    os.environ["MALLOC_TRIM_THRESHOLD_"] = FAIR_MALLOC
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port or free_port())

    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args.workers, args, "env://"), nprocs=args.workers,
             join=True)


if __name__ == "__main__":
    main()
