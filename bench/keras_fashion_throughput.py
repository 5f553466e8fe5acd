"""The seed Fashion-MNIST CNN's training throughput in TensorFlow/Keras on
CPU: the TensorFlow peer of bench/cpu-train-vs-pytorch.sh.

Run it with the interpreter of bench/keras-venv.sh (tensorflow-cpu from
PyPI):

    $(bench/keras-venv.sh) bench/keras_fashion_throughput.py [--jit]

The model and optimizer are bench/keras_fashion_cnn.py's (the seed
document's layers, Adam 0.001, categorical cross-entropy on the softmax
output). The step is what TensorFlow users write for speed: one
`tf.function` holding forward, gradient and Adam update (`--jit`:
`jit_compile=True`, XLA), on one synthetic batch of 256 that stays in
memory, 2 intra-op threads and 1 inter-op thread. After --warmup steps
(tracing and XLA compilation happen there) --steps steps are timed as one
wall-clock span ended by reading the last loss, so no step waits on the
host; prints images/s = batch / mean step time on one line.
"""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--warmup", type=int, default=5)
parser.add_argument("--batch", type=int, default=256)
parser.add_argument("--intra-op", type=int, default=2)
parser.add_argument("--jit", action="store_true",
                    help="compile the step with XLA (jit_compile=True)")
args = parser.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.intra_op)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(0)

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
optimizer = keras.optimizers.Adam(learning_rate=0.001)
loss_fn = keras.losses.CategoricalCrossentropy()
optimizer.build(model.trainable_variables)

images = tf.random.uniform((args.batch, 28, 28, 1))
labels = tf.one_hot(tf.random.uniform((args.batch,), 0, 10, tf.int32), 10)


@tf.function(jit_compile=args.jit)
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for _ in range(args.warmup):
    train_step(images, labels).numpy()
begin = time.perf_counter()
for _ in range(args.steps):
    loss = train_step(images, labels)
loss.numpy()
seconds = time.perf_counter() - begin
print(f"{args.batch * args.steps / seconds:.1f}")
