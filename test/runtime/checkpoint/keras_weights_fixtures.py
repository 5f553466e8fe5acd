"""Keras weights files for KerasWeightsTest, written with h5py as Keras lays
them out, so the tests need neither Keras nor a network:

  keras_weights_fixtures.py OUTDIR
  keras_weights_fixtures.py --from-safetensors WEIGHTS.safetensors OUTDIR

The second form writes graphrun's --save-weights file in Keras' layouts
(OUTDIR/legacy.h5, model.weights.h5, model.keras), for graphrun's own test.

Legacy HDF5 follows keras/src/legacy/saving/legacy_h5_format.py
(save_weights_to_hdf5_group, save_attributes_to_hdf5_group) and tf.keras 2's
hdf5_format.py, which write the same: root attribute layer_names (bytes,
split into layer_names0, 1, ... past HDF5_OBJECT_HEADER_LIMIT), one group
per layer in name order with attribute weight_names, a dataset at each
weight name. Keras 3 follows keras/src/saving/saving_lib.py (H5IOStore):
/layers/<class_snake_case>[_N]/vars/<i> with attribute name = the layer's
name, and the .keras archive (zipfile, ZIP_STORED) holding config.json,
metadata.json and model.weights.h5.

The model (the C++ test's plan): block1_conv1 (Conv2D, kernel [3, 3, 2, 4],
bias [4]), bn (BatchNormalization, 4 channels), dense_1 (Dense, kernel
[16, 3], bias [3]). Weight k of the model in Keras order (1-based: conv
kernel, conv bias, gamma, beta, moving_mean, moving_variance, dense kernel,
dense bias) holds k + i / 8 at flat index i: exact in float16 and bfloat16
too, and different for every weight, so a weight loaded into the wrong
variable shows.
"""

import json
import os
import sys
import zipfile

import h5py
import numpy as np

HDF5_OBJECT_HEADER_LIMIT = 64512

# (layer name, Keras class, [(weight name, shape)]) in model.layers order.
MODEL = [
    ("input_1", "InputLayer", []),
    ("block1_conv1", "Conv2D", [("kernel", (3, 3, 2, 4)), ("bias", (4,))]),
    ("bn", "BatchNormalization", [("gamma", (4,)), ("beta", (4,)),
                                  ("moving_mean", (4,)),
                                  ("moving_variance", (4,))]),
    ("flatten", "Flatten", []),
    ("dense_1", "Dense", [("kernel", (16, 3)), ("bias", (3,))]),
]

# keras.applications.VGG16's layer names (block1_conv1 ... block5_conv3,
# block<i>_pool) with few channels: (3 input channels; 2, 3, 4, 4, 4 per
# block, where VGG16 has 64, 128, 256, 512, 512), and its head (flatten,
# fc1, fc2, predictions) with a 1x1 input after five pools.
VGG16_BLOCKS = [(2, 2), (2, 3), (3, 4), (3, 4), (3, 4)]  # (convs, channels)


def vgg16(top):
    model, cin = [("input_1", "InputLayer", [])], 3
    for b, (convs, cout) in enumerate(VGG16_BLOCKS, 1):
        for c in range(1, convs + 1):
            model.append(("block%d_conv%d" % (b, c), "Conv2D",
                          [("kernel", (3, 3, cin, cout)), ("bias", (cout,))]))
            cin = cout
        model.append(("block%d_pool" % b, "MaxPooling2D", []))
    if top:
        model += [("flatten", "Flatten", []),
                  ("fc1", "Dense", [("kernel", (cin, 6)), ("bias", (6,))]),
                  ("fc2", "Dense", [("kernel", (6, 6)), ("bias", (6,))]),
                  ("predictions", "Dense", [("kernel", (6, 5)),
                                            ("bias", (5,))])]
    return model


def values(k, shape):
    n = int(np.prod(shape))
    return (k + np.arange(n, dtype=np.float32) / 8).reshape(shape)


def model_weights(model=MODEL):
    """{layer: [(weight, array)]} with the values the C++ test expects."""
    out, k = {}, 0
    for layer, _, weights in model:
        out[layer] = []
        for weight, shape in weights:
            k += 1
            out[layer].append((weight, values(k, shape)))
    return out


def save_attributes(group, name, data):
    """legacy_h5_format.save_attributes_to_hdf5_group, chunking included."""
    data_npy = np.asarray(data)
    num_chunks = 1
    chunked = np.array_split(data_npy, num_chunks)
    while any(x.nbytes > HDF5_OBJECT_HEADER_LIMIT for x in chunked):
        num_chunks += 1
        chunked = np.array_split(data_npy, num_chunks)
    if num_chunks > 1:
        for i, chunk in enumerate(chunked):
            group.attrs["%s%d" % (name, i)] = chunk
    else:
        group.attrs[name] = data


def legacy(path, layers, weight_name, root=None, backend="tensorflow",
           keras_version="2.15.0", force_chunks=0):
    """tf.keras 2 model.save_weights("w.h5"): `layers` as model_weights()
    returns, `weight_name(layer, weight)` the name Keras gave the weight."""
    with h5py.File(path, "w") as f:
        g = f if root is None else root(f)
        names = [name.encode("utf8") for name in layers]
        if force_chunks:
            # As if the list outgrew one object header.
            for i, chunk in enumerate(np.array_split(np.asarray(names),
                                                     force_chunks)):
                g.attrs["layer_names%d" % i] = chunk
        else:
            save_attributes(g, "layer_names", names)
        g.attrs["backend"] = backend.encode("utf8")
        g.attrs["keras_version"] = keras_version.encode("utf8")
        for layer in sorted(layers):
            lg = g.create_group(layer)
            wn = [weight_name(layer, w).encode("utf8")
                  for w, _ in layers[layer]]
            if force_chunks and len(wn) > 1:
                half = len(wn) // 2
                lg.attrs["weight_names0"] = np.asarray(wn[:half])
                lg.attrs["weight_names1"] = np.asarray(wn[half:])
            else:
                save_attributes(lg, "weight_names", wn)
            for name, (_, value) in zip(wn, layers[layer]):
                d = lg.create_dataset(name, value.shape, dtype=value.dtype)
                d[:] = value


def tf2_name(layer, weight):
    return "%s/%s:0" % (layer, weight)


def keras3(f, layers, model=MODEL, names=True, dtype=None):
    """Keras 3 H5IOStore: /layers/<snake_case(class)>[_N]/vars/<i>."""
    classes = {name: cls for name, cls, _ in model}
    used = {}
    top = f.create_group("layers")
    for layer in [name for name, _, _ in model if name in layers]:
        snake = {"InputLayer": "input_layer", "Conv2D": "conv2d",
                 "BatchNormalization": "batch_normalization",
                 "MaxPooling2D": "max_pooling2d", "Flatten": "flatten", "Dense": "dense",
                 "DepthwiseConv2D": "depthwise_conv2d",
                 "SeparableConv2D": "separable_conv2d"}[classes[layer]]
        if snake in used:
            used[snake] += 1
            group = "%s_%d" % (snake, used[snake])
        else:
            used[snake] = 0
            group = snake
        v = top.create_group(group).create_group("vars")
        if names:
            v.attrs["name"] = layer
        for i, (_, value) in enumerate(layers[layer]):
            if dtype == "bfloat16":
                bits = (value.astype(np.float32).view(np.uint32) >> 16)
                raw = bits.astype("<u2").view("V2")
                d = v.create_dataset(str(i), data=raw)
                d.attrs["dtype"] = "bfloat16"
            else:
                v[str(i)] = value if dtype is None else value.astype(dtype)
    mv = f.create_group("vars")
    if names:
        mv.attrs["name"] = "functional"


def keras3_file(path, layers, **kw):
    with h5py.File(path, "w") as f:
        keras3(f, layers, **kw)


def config_json(model=MODEL):
    return json.dumps({
        "module": "keras", "class_name": "Functional",
        "config": {"name": "functional", "layers": [
            {"module": "keras.layers", "class_name": cls,
             "config": {"name": name}, "name": name}
            for name, cls, _ in model]}})


def keras_archive(path, h5_bytes, member="model.weights.h5",
                  compression=zipfile.ZIP_STORED, model=MODEL):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", config_json(model))
        if h5_bytes is not None:
            zf.writestr(member, h5_bytes)


def h5_bytes(write):
    import io
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        write(f)
    return buf.getvalue()


def main(out):
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)
    w = model_weights()
    layers = dict(w)  # weightless layers too: Keras lists every layer

    # --- legacy HDF5 -------------------------------------------------------
    legacy(p("tf2.h5"), layers, tf2_name)
    # A model-name prefix, "_1" suffixes: only positions matter.
    legacy(p("prefix.h5"), layers, lambda l, wt: {
        "block1_conv1": "vgg16/block1_conv1/%s:0",
        "bn": "bn_1/%s_1:0",
        "dense_1": "model_1/dense_1/%s:0"}.get(l, "%s") % wt)
    # Keras 1, as in keras.applications' VGG16 files: "block1_conv1_W_1:0".
    k1 = {"kernel": "W", "bias": "b", "gamma": "gamma", "beta": "beta",
          "moving_mean": "running_mean", "moving_variance": "running_std"}
    legacy(p("keras1.h5"), layers,
           lambda l, wt: "%s_%s_1:0" % (l, k1[wt]), keras_version="1.2.2")
    # model.save("m.h5"): the same under /model_weights.
    def model_weights_group(f):
        f.attrs["model_config"] = json.dumps({"class_name": "Functional"})
        return f.create_group("model_weights")
    legacy(p("full_model.h5"), layers, tf2_name, root=model_weights_group)
    legacy(p("chunked.h5"), layers, tf2_name, force_chunks=2)
    legacy(p("theano.h5"), layers, tf2_name, backend="theano",
           keras_version="1.2.2")

    # --- Keras 3 -----------------------------------------------------------
    keras3_file(p("model.weights.h5"), layers)
    keras3_file(p("noname.weights.h5"), layers, names=False)
    keras3_file(p("f64.weights.h5"), layers, dtype=np.float64)
    keras3_file(p("f16.weights.h5"), layers, dtype=np.float16)
    keras3_file(p("bf16.weights.h5"), layers, dtype="bfloat16")

    def with_optimizer(f):
        keras3(f, layers)
        o = f.create_group("optimizer").create_group("vars")
        o["0"] = np.array(3, dtype=np.int64)  # iterations
        o["1"] = np.ones((3, 3, 2, 4), np.float32)
    keras_archive(p("model.keras"), h5_bytes(with_optimizer))
    keras_archive(p("noname.keras"),
                  h5_bytes(lambda f: keras3(f, layers, names=False)),
                  compression=zipfile.ZIP_DEFLATED)
    keras_archive(p("noweights.keras"), None)
    keras_archive(p("npz.keras"), b"PK-npz", member="model.weights.npz")
    # A stored member with one byte changed: only the CRC can tell.
    keras_archive(p("crc.keras"), h5_bytes(lambda f: keras3(f, layers)))
    with open(p("crc.keras"), "r+b") as f:
        blob = bytearray(f.read())
        at = blob.rfind(b"\x89HDF\r\n\x1a\n")
        # Past the superblock, in raw data: the file still opens.
        blob[at + len(blob[at:]) // 2] ^= 0xFF
        f.seek(0)
        f.write(blob)

    # --- faults ------------------------------------------------------------
    legacy(p("missing.h5"), {k: v for k, v in layers.items()
                             if k != "dense_1"}, tf2_name)
    extra = dict(layers)
    extra["dense_9"] = [("kernel", values(9, (3, 2))),
                        ("bias", values(10, (2,)))]
    legacy(p("extra.h5"), extra, tf2_name)
    five = dict(layers)
    five["bn"] = layers["bn"] + [("extra", values(11, (4,)))]
    legacy(p("extra_weight.h5"), five, tf2_name)
    two = dict(layers)
    two["bn"] = layers["bn"][:2]
    keras3_file(p("missing_weight.weights.h5"), two)
    t = dict(layers)
    t["dense_1"] = [("kernel", layers["dense_1"][0][1].T.copy()),
                    layers["dense_1"][1]]
    legacy(p("shape.h5"), t, tf2_name)
    i = dict(layers)
    i["dense_1"] = [("kernel", np.zeros((16, 3), np.int32)),
                    layers["dense_1"][1]]
    legacy(p("dtype.h5"), i, tf2_name)
    with open(p("not_hdf5.h5"), "w") as f:
        f.write("this is not HDF5\n")
    with open(p("tf2.h5"), "rb") as f:
        blob = f.read()
    with open(p("truncated.h5"), "wb") as f:
        f.write(blob[:len(blob) // 2])
    legacy(p("softlink.h5"), layers, tf2_name)
    with h5py.File(p("softlink.h5"), "a") as f:
        del f["block1_conv1/block1_conv1/kernel:0"]
        f["block1_conv1/block1_conv1/kernel:0"] = h5py.SoftLink(
            "/dense_1/dense_1/kernel:0")

    # --- partial loads -----------------------------------------------------
    # The notop case: the file has the model's base, not its head.
    legacy(p("notop.h5"), {k: v for k, v in layers.items()
                           if k not in ("flatten", "dense_1")},
           lambda l, wt: "%s_%s_1:0" % (l, k1[wt]))
    # Everything that can go wrong at once, for the report.
    mixed = {k: v for k, v in layers.items()}
    mixed["bn"] = layers["bn"][:2]  # counts differ: the whole layer skipped
    mixed["dense_1"] = [("kernel", values(7, (10, 3))),  # shape differs
                        layers["dense_1"][1]]
    mixed["fc1"] = [("kernel", values(12, (16, 8))), ("bias", values(13, (8,)))]
    legacy(p("mixed.h5"), mixed, tf2_name)

    # VGG16-shaped: keras.applications' notop file (Keras 1 weight names,
    # as vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5 has them), and
    # the whole model with its head in Keras 3's layout (thirteen conv2d_N
    # groups, matched by their name attribute).
    legacy(p("vgg16_notop.h5"), model_weights(vgg16(top=False)),
           lambda l, wt: "%s_%s_1:0" % (l, k1[wt]), keras_version="2.0.8")
    keras3_file(p("vgg16.weights.h5"), model_weights(vgg16(top=True)),
                model=vgg16(top=True))


def from_safetensors(path, out):
    """graphrun's weights ("<layer>/<weight>", Keras layouts) as Keras
    writes them; the layer's class follows from its weights."""
    sys.path.insert(0, os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "compare"))
    import safetensors_io
    order = {"kernel": 0, "depthwise_kernel": 0, "pointwise_kernel": 1,
             "bias": 2, "gamma": 3, "beta": 4, "moving_mean": 5,
             "moving_variance": 6}
    layers = {}
    for name, value in safetensors_io.read(path).items():
        layer, weight = name.rsplit("/", 1)
        layers.setdefault(layer, []).append((weight, value))
    model = []
    for layer, weights in layers.items():
        weights.sort(key=lambda w: order[w[0]])
        kinds = dict(weights)
        # DepthwiseConv2D's kernel looks like Conv2D's: Keras' default
        # layer name tells them apart.
        cls = ("BatchNormalization" if "moving_mean" in kinds
               else "SeparableConv2D" if "pointwise_kernel" in kinds
               else "DepthwiseConv2D" if layer.startswith("depthwise_conv2d")
               else "Conv2D" if kinds["kernel"].ndim == 4 else "Dense")
        model.append((layer, cls, [(w, v.shape) for w, v in weights]))
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)
    legacy(p("legacy.h5"), layers, tf2_name)
    keras3_file(p("model.weights.h5"), layers, model=model)
    keras_archive(p("model.keras"),
                  h5_bytes(lambda f: keras3(f, layers, model=model)),
                  model=model)


if __name__ == "__main__":
    if sys.argv[1] == "--from-safetensors":
        from_safetensors(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
