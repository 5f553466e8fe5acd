"""What the peer scripts share (PyTorch: pytorch_fashion_accuracy.py,
pytorch_fashion_cnn.py, pytorch_ddp_fashion.py; Keras: keras_fashion_cnn.py):
the Fashion-MNIST IDX files and the seed CNN in PyTorch. Imports neither
framework nor NumPy, so that every interpreter the benches use (Debian's
with torch, the Keras virtualenv, a GPU machine's) can load it.
"""
import gzip
import os


def find_idx(data_dir, name):
    """The path of IDX file `name` in `data_dir`, gzipped or not."""
    for suffix in (".gz", ""):
        path = os.path.join(data_dir, name + suffix)
        if os.path.exists(path):
            return path
    raise SystemExit(f"{data_dir}: no {name}[.gz]")


def read_idx(path):
    """An IDX file as (its bytes, its shape, the offset of its data)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = bytearray(f.read())
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return data, shape, 4 + 4 * dims


def split_files(data_dir, split):
    """The (images, labels) IDX paths of the "train" or "test" split."""
    prefix = "train" if split == "train" else "t10k"
    return (find_idx(data_dir, f"{prefix}-images-idx3-ubyte"),
            find_idx(data_dir, f"{prefix}-labels-idx1-ubyte"))


def torch_seed_cnn(nn):
    """The seed CNN (Conv2D 32, MaxPool, Conv2D 64, MaxPool, Conv2D 64,
    Flatten, Dense 64, Dense 10 logits) with Keras's initialisers: Glorot
    uniform kernels (PyTorch computes the fans as Keras does: channels x
    kernel area) and zero biases."""
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(64, 64, 3), nn.ReLU(), nn.Flatten(),
        nn.Linear(576, 64), nn.ReLU(), nn.Linear(64, 10))
    for layer in model:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
    return model
