"""The seed Fashion-MNIST CNN trained by TensorFlow/Keras `fit` on CPU: the
Keras peer of bench/cpu-accuracy-vs-peers.sh.

Run it with the interpreter of bench/keras-venv.sh (tensorflow-cpu from
PyPI):

    $(bench/keras-venv.sh) bench/keras_fashion_cnn.py --epochs 10 --seed 0

The model is the seed document's: Conv2D(32,3,relu), MaxPool(2),
Conv2D(64,3,relu), MaxPool(2), Conv2D(64,3,relu), Flatten, Dense(64,relu),
Dense(10,softmax), categorical cross-entropy, Adam(learning_rate=0.001),
Keras's default initialisers (Glorot uniform kernels, zero biases).

Data: the real Fashion-MNIST IDX files (read with numpy from --data-dir, the
directory graphrun reads; nothing is downloaded), pixels / 255.0 as float32,
NHWC, one-hot labels. Training batches come from tf.data: the whole training
set shuffled afresh every epoch, batches of 256 with the last partial batch
dropped (234 steps an epoch, as graphrun and the PyTorch peer take),
prefetched.

Threads: --intra-op (default 2) and --inter-op (default 1) threads. The
model is a chain, with no independent ops for a second inter-op thread to run
beside the first; with 1, TensorFlow computes on 2 threads, as the others do
(on this 2-core machine inter-op 2 used as much CPU a step, with ~30% more
context switches). glibc's malloc is left alone: TensorFlow keeps its
buffers, and takes no page faults a step either way (the PyTorch peer needs
MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ for that).

After every epoch a callback evaluates the whole 10000-example test set and
prints one JSON line:

    {"framework": "keras", "epoch": 1, "test_accuracy": 0.85,
     "test_loss": 0.41, "train_seconds_so_far": 21.3,
     "wall_seconds_so_far": 22.0, "images_per_sec": 2800.0}

train_seconds_so_far is the wall-clock time since training began (Keras's
on_train_begin: it includes tracing the train function at the first step)
with the evaluations' time left out; wall_seconds_so_far includes them.
images_per_sec is this epoch's training images over this epoch's training
seconds. Everything else (TensorFlow's log lines, a last summary) goes to
stderr.
"""
import argparse
import json
import os
import sys
import time

import fashion_peers

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--batch", type=int, default=256)
parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
parser.add_argument("--intra-op", type=int, default=2)
parser.add_argument("--inter-op", type=int, default=1)
parser.add_argument("--eval-batch", type=int, default=1000)
args = parser.parse_args()


def read_idx(path):
    data, shape, offset = fashion_peers.read_idx(path)
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(shape)


def load(split):
    images_path, labels_path = fashion_peers.split_files(args.data_dir, split)
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    x = (images.astype(np.float32) / 255.0)[..., None]
    y = np.eye(10, dtype=np.float32)[labels]
    return x, y


import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

# Before any op runs.
tf.config.threading.set_intra_op_parallelism_threads(args.intra_op)
tf.config.threading.set_inter_op_parallelism_threads(args.inter_op)
keras.utils.set_random_seed(args.seed)

train_x, train_y = load("train")
test_x, test_y = load("test")

model = keras.Sequential([
    keras.Input(shape=(28, 28, 1)),
    keras.layers.Conv2D(32, 3, activation="relu"),
    keras.layers.MaxPooling2D(2),
    keras.layers.Conv2D(64, 3, activation="relu"),
    keras.layers.MaxPooling2D(2),
    keras.layers.Conv2D(64, 3, activation="relu"),
    keras.layers.Flatten(),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(10, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001),
              loss="categorical_crossentropy", metrics=["accuracy"])

steps_per_epoch = len(train_x) // args.batch
train = (tf.data.Dataset.from_tensor_slices((train_x, train_y))
         .shuffle(len(train_x), seed=args.seed, reshuffle_each_iteration=True)
         .batch(args.batch, drop_remainder=True)
         .prefetch(tf.data.AUTOTUNE))


class EpochEval(keras.callbacks.Callback):
    """Evaluates the test set after each epoch, off the training clock."""

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()
        self.eval_seconds = 0.0
        self.last_train = 0.0

    def on_epoch_end(self, epoch, logs=None):
        now = time.perf_counter()
        train_so_far = now - self.start - self.eval_seconds
        epoch_seconds = train_so_far - self.last_train
        self.last_train = train_so_far
        begin = time.perf_counter()
        loss, accuracy = self.model.evaluate(
            test_x, test_y, batch_size=args.eval_batch, verbose=0)
        self.eval_seconds += time.perf_counter() - begin
        print(json.dumps({
            "framework": "keras",
            "epoch": epoch + 1,
            "test_accuracy": round(float(accuracy), 6),
            "test_loss": round(float(loss), 6),
            "train_seconds_so_far": round(train_so_far, 3),
            "wall_seconds_so_far": round(time.perf_counter() - self.start, 3),
            "images_per_sec": round(steps_per_epoch * args.batch / epoch_seconds, 1),
        }), flush=True)


print(f"keras_fashion_cnn: tensorflow {tf.__version__}, keras "
      f"{keras.__version__}, {args.intra_op} intra-op / {args.inter_op} "
      f"inter-op threads, batch {args.batch}, {steps_per_epoch} steps an "
      f"epoch, seed {args.seed}", file=sys.stderr)
model.fit(train, epochs=args.epochs, shuffle=False, verbose=0,
          callbacks=[EpochEval()])
