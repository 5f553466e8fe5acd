"""tf.keras 2 (the tf_keras package) reads graphrun's legacy .h5.

    tf_keras_reads_h5.py W.h5 METRICS.jsonl MODEL.json

Builds MODEL.json's Sequential layers in tf_keras (Keras 3 configs, cleaned
of what tf.keras 2 does not know), load_weights(W.h5) and evaluates on the
Fashion-MNIST test set: the loss and accuracy must equal graphrun's --eval
(the last eval record of METRICS.jsonl) within 1e-5. bench/tf-keras-reads-h5.sh
runs it; the tests check the file's layout with h5py and Keras 3.
"""
import os, sys, json, gzip, struct
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tf_keras
def read_idx(p):
    b = gzip.open(p).read(); _, _, n = struct.unpack(">HBB", b[:4])
    d = struct.unpack(f">{n}I", b[4:4+4*n]); return np.frombuffer(b[4+4*n:], np.uint8).reshape(d)
x = read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").astype("float32").reshape(-1,28,28,1)/255
y = tf_keras.utils.to_categorical(read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"), 10)
L = tf_keras.layers
cfg = json.load(open(sys.argv[3]))
layers = [l for l in cfg["config"]["layers"] if l["class_name"] != "InputLayer"]
def clean(c):
    c = {k: v for k, v in c.items() if k not in ("quantization_config", "lora_rank", "lora_alpha")}; c["dtype"] = "float32"
    for k, v in list(c.items()):
        if isinstance(v, dict) and "class_name" in v:
            c[k] = {"class_name": v["class_name"], "config": {a: b for a, b in v.get("config", {}).items() if a in ("seed",)}}
    return c
model = tf_keras.Sequential([L.InputLayer((28, 28, 1))] +
    [tf_keras.layers.deserialize({"class_name": l["class_name"], "config": clean(l["config"])}) for l in layers])
model.compile(loss="categorical_crossentropy", metrics=["accuracy"])
model.load_weights(sys.argv[1])
r = model.evaluate(x, y, batch_size=500, verbose=0, return_dict=True)
ours = [json.loads(l) for l in open(sys.argv[2]) if '"eval"' in l][-1]
print("tf_keras", tf_keras.__version__, "evaluate:", r, "graphrun --eval:", {k: ours[k] for k in ("loss", "accuracy")})
assert abs(r["loss"] - ours["loss"]) < 1e-5 and abs(r["accuracy"] - ours["accuracy"]) < 1e-5
print("ok")
