"""Fixture for keras-image-folder-one-step.test: an image folder through
keras.utils.image_dataset_from_directory and one model.fit step.

Regenerate (TensorFlow 2.21, Keras 3; the test itself needs neither):

  /work/venvs/keras-tf/bin/python \
      test/compare/keras_image_folder.py test/compare/Inputs/image_folder

Writes to DIR:

  images/CLASS/*.jpeg   9 JPEGs (tf.io.encode_jpeg, quality 90) in 3 class
                        folders, all but one of another size than the
                        model's 16x16: colour 4:2:0 and 4:4:4 and grayscale
                        files, smaller and larger than the input, 5 of them
                        large enough for a DCT-scaled decode (graphrun
                        --fast-decode) at 1/2, 1/4 or 1/8 (SIZES says
                        which)
  model.json            Conv2D(4, 3, relu) -> MaxPooling2D -> Flatten ->
                        Dense(3, softmax) on a 16x16x3 input, sparse
                        categorical cross-entropy, SGD(0.1)
  init.safetensors      its variables before the step, Keras' names
  expected.safetensors  the variables after one step on [0, 1] pixels
  losses.json           Keras' first-step loss (fit's logged loss of one
                        step on one batch of all 9 images, shuffle off)
                        for each preprocessing of graphrun's --preprocess
                        (MODES), and how the run was made
  pixels.npy            the batch image_dataset_from_directory gives,
                        float32 9x16x16x3 in [0, 255], in its file order
                        (classes sorted, then names), before preprocessing
  identity.json         Conv2D(3, 1, no bias) -> Flatten on the same input,
                        whose --predict with an identity kernel gives the
                        pixels graphrun feeds a model

The images are Fashion-MNIST test images (the IDX file Debian's
dataset-fashion-mnist installs) resized to each size, tinted per channel,
with mild noise: photographic content with the texture that makes a scaled
inverse DCT differ from a full decode.
"""

import gzip
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import write as write_safetensors  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
SHAPE = (16, 16, 3)
BATCH = 9
# (class, name, height, width, channels, chroma_downsampling): the DCT
# scale --fast-decode takes for a 16x16 input is the smallest 1/2, 1/4,
# 1/8 whose ceil(size * scale) stays at least 16 in both dimensions.
SIZES = [
    ("ankle", "a0.jpeg", 50, 64, 3, True),    # 1/2 (25x32)
    ("ankle", "a1.jpeg", 19, 23, 3, True),    # full: a small reduction
    ("ankle", "a2.jpeg", 128, 132, 3, True),  # 1/8 (16x17)
    ("bag", "b0.jpeg", 36, 40, 1, True),      # 1/2 (18x20), grayscale
    ("bag", "b1.jpeg", 16, 16, 3, True),      # the input's size: a copy
    ("bag", "b2.jpeg", 12, 20, 3, False),     # enlarged in height, 4:4:4
    ("coat", "c0.jpeg", 70, 33, 3, True),     # 1/2 (35x17)
    ("coat", "c1.jpeg", 66, 80, 1, True),     # 1/4 (17x20), grayscale
    ("coat", "c2.jpeg", 28, 28, 3, True),     # full: Fashion-MNIST's size
]
MODES = ["unit", "tf", "torch", "caffe"]


def fashion_images():
    with gzip.open(FASHION, "rb") as f:
        blob = f.read()
    _, _, ndim = struct.unpack(">HBB", blob[:4])
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob[4 + 4 * ndim:], np.uint8).reshape(dims)


def write_images(tf, root):
    rng = np.random.default_rng(11)
    sources = fashion_images()
    for k, (cls, name, h, w, c, chroma) in enumerate(SIZES):
        base = sources[k * 7].astype(np.float32)[..., None]
        big = tf.image.resize(base, (h, w), method="bicubic").numpy()
        tint = rng.uniform(0.5, 1.0, size=3).astype(np.float32)
        img = big * tint + 40 * rng.uniform(size=3).astype(np.float32)
        img = img + rng.normal(0, 12, size=(h, w, 3))
        if c == 1:
            img = img.mean(axis=-1, keepdims=True)
        img = np.clip(np.round(img), 0, 255).astype(np.uint8)
        data = tf.io.encode_jpeg(img, quality=90, chroma_downsampling=chroma,
                                 format="grayscale" if c == 1 else "rgb")
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        tf.io.write_file(os.path.join(root, cls, name), data)


def build(keras):
    keras.utils.set_random_seed(5)
    inputs = keras.Input(SHAPE, name="input_layer")
    x = keras.layers.Conv2D(4, 3, activation="relu", name="conv2d")(inputs)
    x = keras.layers.MaxPooling2D(2, name="max_pooling2d")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    outputs = keras.layers.Dense(3, activation="softmax", name="dense")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss="sparse_categorical_crossentropy")
    return model


def variables(model):
    return {layer.name + "/" + w.name: np.asarray(w.numpy(), np.float32)
            for layer in model.layers for w in layer.weights}


def preprocessing(keras, mode):
    """The map a Keras user puts on the dataset for graphrun's --preprocess
    `mode`: Keras' own preprocess_input where there is one."""
    apps = keras.applications
    return {
        "unit": lambda x: x / 255.0,
        "tf": apps.mobilenet_v2.preprocess_input,       # mode "tf"
        "torch": apps.densenet.preprocess_input,        # mode "torch"
        "caffe": apps.vgg16.preprocess_input,           # mode "caffe"
    }[mode]


def main():
    directory = sys.argv[1]
    root = os.path.join(directory, "images")
    os.makedirs(directory, exist_ok=True)
    import tensorflow as tf
    import keras
    write_images(tf, root)

    def dataset():
        return keras.utils.image_dataset_from_directory(
            root, image_size=SHAPE[:2], batch_size=BATCH, shuffle=False,
            label_mode="int", verbose=False)

    pixels, labels = next(iter(dataset()))
    np.save(os.path.join(directory, "pixels.npy"),
            pixels.numpy().astype(np.float32))

    model = build(keras)
    with open(os.path.join(directory, "model.json"), "w") as f:
        f.write(model.to_json())
    init = variables(model)
    write_safetensors(os.path.join(directory, "init.safetensors"), init)
    initial = model.get_weights()

    losses = {}
    for mode in MODES:
        model = build(keras)
        model.set_weights(initial)
        pre = preprocessing(keras, mode)
        history = model.fit(dataset().map(lambda x, y: (pre(x), y)),
                            epochs=1, shuffle=False, verbose=0)
        losses[mode] = float(history.history["loss"][0])
        if mode == "unit":
            write_safetensors(os.path.join(directory, "expected.safetensors"),
                              variables(model))
        # The map's arithmetic is preprocess_input's on NumPy (the lit
        # test's reference) exactly, or the test's pixel check would not
        # be fair.
        ours = pre(pixels.numpy().copy())
        theirs = next(iter(dataset().map(lambda x, y: (pre(x), y))))[0]
        print(f"{mode}: loss {losses[mode]:.7f}; tf.data map vs NumPy "
              f"max |difference| "
              f"{float(np.abs(np.asarray(ours) - theirs.numpy()).max()):.3g}")
    with open(os.path.join(directory, "losses.json"), "w") as f:
        json.dump({"losses": losses,
                   "labels": [int(v) for v in labels.numpy()],
                   "made_with": f"TensorFlow {tf.__version__}, Keras "
                                f"{keras.__version__}: image_dataset_from_"
                                f"directory(image_size={SHAPE[:2]}, batch_"
                                f"size={BATCH}, shuffle=False), then fit("
                                f"epochs=1) of SGD(0.1)"}, f, indent=1)
        f.write("\n")

    inputs = keras.Input(SHAPE, name="input_layer")
    x = keras.layers.Conv2D(3, 1, use_bias=False, name="identity")(inputs)
    outputs = keras.layers.Flatten(name="flatten")(x)
    identity = keras.Model(inputs, outputs)
    # A class-label loss, which graphrun takes with an image folder's
    # labels; --predict writes the output as it is.
    identity.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with open(os.path.join(directory, "identity.json"), "w") as f:
        f.write(identity.to_json())


if __name__ == "__main__":
    main()
