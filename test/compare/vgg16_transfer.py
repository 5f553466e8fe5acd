"""The pieces of the transfer-learning test (vgg16-transfer.test), made
without Keras or a network, and the checks it runs on graphrun's output:

  vgg16_transfer.py model OUT.json             the seed's VGG16 transfer
      model (examples/vgg16_oct.json: blocks 1-4 frozen, Flatten,
      Dense(4, softmax)) at a 32x32x3 input
  vgg16_transfer.py weights OUT.h5             a keras.applications-style
      vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5 (legacy HDF5,
      Keras 1 weight names, the pools listed without weights), random
  vgg16_transfer.py images DIR PER_CLASS SEED  4 class folders of 32x32
      JPEGs (PIL, quality 90), each class its own tint
  vgg16_transfer.py check-frozen H5 BEFORE AFTER
      BEFORE (weights after loading H5) holds H5's values exactly; AFTER
      (after training) has blocks 1-4 byte-identical to BEFORE and block5
      and the head changed
  vgg16_transfer.py check-predictions WEIGHTS PRED.npy
      PRED.npy's rows equal a NumPy forward pass (float64) of WEIGHTS on
      the files PRED.npy.txt lists, decoded as TF does (libjpeg-turbo's
      fast IDCT, as graphrun by default), within 1e-4

VGG16 has its full widths (64 ... 512 channels, 14.7 M weights): the test
is about the real model's names, shapes and frozen set, and a 32x32 input
keeps it fast.
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "test", "runtime", "checkpoint"))
sys.path.insert(0, HERE)

SIZE = 32
CLASSES = ["CNV", "DME", "DRUSEN", "NORMAL"]  # the seed's OCT2017 labels
# (block, filters of each conv), as keras.applications.VGG16.
BLOCKS = [(1, [64, 64]), (2, [128, 128]), (3, [256, 256, 256]),
          (4, [512, 512, 512]), (5, [512, 512, 512])]
FROZEN_BLOCKS = ("block1", "block2", "block3", "block4")


def conv_layers():
    """[(name, kernel shape)] in model order."""
    out, cin = [], 3
    for b, filters in BLOCKS:
        for i, f in enumerate(filters, 1):
            out.append(("block%d_conv%d" % (b, i), (3, 3, cin, f)))
            cin = f
    return out


def model(path):
    with open(os.path.join(SRC, "examples", "vgg16_oct.json")) as f:
        m = json.load(f)
    layers = m["config"]["layers"]
    assert layers[0]["class_name"] == "InputLayer"
    layers[0]["config"]["batch_shape"] = [None, SIZE, SIZE, 3]
    if "build_config" in m:
        del m["build_config"]
    with open(path, "w") as f:
        json.dump(m, f)


def weights(path):
    import keras_weights_fixtures as kwf
    rng = np.random.default_rng(1)
    layers = {}
    for name, shape in conv_layers():
        fan_in = shape[0] * shape[1] * shape[2]
        kernel = rng.normal(0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)
        bias = rng.normal(0, 0.01, shape[3]).astype(np.float32)
        layers[name] = [("W", kernel), ("b", bias)]
    for b in range(1, 6):
        layers["block%d_pool" % b] = []
    # keras.applications' files carry Keras 1 names: block1_conv1_W_1:0.
    kwf.legacy(path, layers, lambda layer, w: "%s_%s_1:0" % (layer, w),
               keras_version="1.2.2")


def images(root, per_class, seed):
    from PIL import Image
    rng = np.random.default_rng(seed)
    for k, name in enumerate(CLASSES):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        tint = np.zeros(3)
        tint[k % 3] = 90.0
        if k == 3:
            tint[:] = -60.0
        for i in range(per_class):
            pixels = rng.normal(128, 40, (SIZE, SIZE, 3)) + tint
            pixels = np.clip(pixels, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(
                os.path.join(root, name, "%s_%03d.jpeg" % (name, i)),
                quality=90)


def h5_conv_weights(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        for name, _ in conv_layers():
            out[name + "/kernel"] = f[name][name + "_W_1:0"][()]
            out[name + "/bias"] = f[name][name + "_b_1:0"][()]
    return out


def check_frozen(h5, before_path, after_path):
    import safetensors_io
    before = safetensors_io.read(before_path)
    after = safetensors_io.read(after_path)
    loaded = h5_conv_weights(h5)
    for name, value in loaded.items():
        if before[name].tobytes() != value.astype(np.float32).tobytes():
            sys.exit("%s: not the .h5's values after loading" % name)
    frozen = changed = 0
    for name in sorted(before):
        same = before[name].tobytes() == after[name].tobytes()
        if name.startswith(FROZEN_BLOCKS):
            if not same:
                diff = np.abs(before[name] - after[name]).max()
                sys.exit("%s: frozen, yet changed by training (max %g)" %
                         (name, diff))
            frozen += 1
        else:
            if same:
                sys.exit("%s: trainable, yet unchanged by training" % name)
            changed += 1
    print("frozen weights byte-identical: %d; trained weights changed: %d" %
          (frozen, changed))


def forward(w, x):
    """VGG16 + Flatten + Dense(4, softmax), NHWC, in float64."""
    for b, filters in BLOCKS:
        for i in range(1, len(filters) + 1):
            name = "block%d_conv%d" % (b, i)
            k = w[name + "/kernel"].astype(np.float64)
            n, h, wd, c = x.shape
            p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
            cols = np.stack([p[:, dy:dy + h, dx:dx + wd, :]
                             for dy in range(3) for dx in range(3)], axis=3)
            x = cols.reshape(n, h, wd, 9 * c) @ k.reshape(9 * c, -1)
            x = np.maximum(x + w[name + "/bias"], 0)
        n, h, wd, c = x.shape
        x = x.reshape(n, h // 2, 2, wd // 2, 2, c).max(axis=(2, 4))
    logits = x.reshape(x.shape[0], -1) @ w["dense/kernel"].astype(
        np.float64) + w["dense/bias"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_predictions(weights_path, pred_path):
    import safetensors_io
    # graphrun decodes as tf.io.decode_jpeg does (libjpeg-turbo's fast
    # IDCT), which PIL cannot: the image-folder tests' decoder does.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "tools", "graphrun"))
    from image_folder_check import decode_like_tf
    w = safetensors_io.read(weights_path)
    pred = np.load(pred_path)
    with open(pred_path + ".txt") as f:
        files = [line.rstrip("\n") for line in f if line.strip()]
    if pred.shape != (len(files), len(CLASSES)):
        sys.exit("predictions %s for %d files" % (pred.shape, len(files)))
    x = np.stack([decode_like_tf(p, grey=False).astype(np.float64) / 255
                  for p in files])
    want = forward(w, x)
    diff = np.abs(pred - want).max()
    if diff > 1e-4:
        row = int(np.abs(pred - want).max(axis=1).argmax())
        sys.exit("%s: max |ours - NumPy| = %g > 1e-4 (row %d, %s)" %
                 (pred_path, diff, row, files[row]))
    print("%d predictions match NumPy's forward pass within 1e-4 (max %.2g)" %
          (len(files), diff))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "model":
        model(*args)
    elif cmd == "weights":
        weights(*args)
    elif cmd == "images":
        images(args[0], int(args[1]), int(args[2]))
    elif cmd == "check-frozen":
        check_frozen(*args)
    elif cmd == "check-predictions":
        check_predictions(*args)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
