"""Writes arrays that graphrun must refuse before the first step.

  bad_arrays.py OUT_DIR

Each file breaks one rule, for the multi-GPU guide's MLP (input (N, 784),
class-index labels); arrays-bad-input.test names what graphrun must say.
"""

import io
import os
import sys
import zipfile

import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.random((300, 784), dtype=np.float32)
    y = rng.integers(0, 10, 300).astype(np.uint8)
    p = lambda name: os.path.join(out, name)
    np.savez(p("good.npz"), x=x, y=y)
    # Members the model does not read stay unread: class names (unicode)
    # and a pickled object array beside the data.
    np.savez(p("extra.npz"), x=x, y=y, class_names=np.array(["a", "b"]),
             notes=np.array([{"source": "test"}], dtype=object))
    # Predictions need no labels: the one other array stays unread.
    np.savez(p("predictmeta.npz"), x=x, class_names=np.array(["a", "b"]))
    # Without a y the one other array is the labels: read, and refused.
    np.savez(p("unicodey.npz"), x=x, labels=np.array(["a"] * 300))
    np.savez(p("lengths.npz"), x=x, y=y[:299])
    np.savez(p("noinput.npz"), pixels=x, labels=y)
    np.savez(p("shape.npz"), x=x.reshape(300, 28, 28), y=y)
    np.savez(p("complex.npz"), x=x.astype(np.complex64), y=y)
    labels = y.astype(np.float32)
    labels[17] = np.nan
    np.savez(p("nanlabel.npz"), x=x, y=labels)
    fraction = y.astype(np.float32)
    fraction[3] = 2.5
    np.savez(p("fraction.npz"), x=x, y=fraction)
    w = rng.uniform(0.5, 2.0, 300).astype(np.float32)
    np.savez(p("weighted.npz"), x=x, y=y, sample_weight=w)
    np.savez(p("weightshape.npz"), x=x, y=y, sample_weight=w.reshape(150, 2))
    np.savez(p("weightlength.npz"), x=x, y=y, sample_weight=w[:299])
    nan_weight = w.copy()
    nan_weight[41] = np.nan
    np.savez(p("weightnan.npz"), x=x, y=y, sample_weight=nan_weight)
    with open(p("class_weight.json"), "w") as f:
        f.write('{"0": 2.0, "one": 1.0}')
    with open(p("class_weight_twice.json"), "w") as f:
        f.write('{"1": 2.0, "01": 3.0}')
    with open(p("class_weight_huge.json"), "w") as f:
        f.write('{"0": 1.0, "1": 1e300}')
    huge_weight = w.astype(np.float64)
    huge_weight[7] = 1e300
    np.savez(p("weighthuge.npz"), x=x, y=y, sample_weight=huge_weight)
    np.save(p("x.npy"), x)
    np.save(p("y.npy"), y)
    with open(p("x.npy"), "rb") as f:
        whole = f.read()
    with open(p("truncated.npy"), "wb") as f:
        f.write(whole[: len(whole) - 1000])
    with open(p("notzip.npz"), "wb") as f:
        f.write(b"x,y\n1,2\n")
    open(p("empty.npy"), "wb").close()
    objects = np.empty(300, dtype=object)
    objects[:] = [{"label": int(v)} for v in y]
    np.save(p("pickled.npy"), objects, allow_pickle=True)
    with open(p("bad.csv"), "w") as f:
        f.write(",".join("p%d" % i for i in range(784)) + ",label\n")
        for r in range(5):
            cells = ["0.5"] * 784 + [str(r % 10)]
            if r == 3:
                cells[12] = "abc"
            f.write(",".join(cells) + "\n")
    open(p("empty.csv"), "w").close()
    # Two members named x.npy: np.load takes the last, which is no reason
    # to guess.
    with zipfile.ZipFile(p("twice.npz"), "w") as z:
        for name, array in (("x.npy", x), ("x.npy", 2 * x), ("y.npy", y)):
            buffer = io.BytesIO()
            np.save(buffer, array)
            z.writestr(name, buffer.getvalue())
    # A directory whose name holds a comma, as arrays:X.npy,Y.npy splits.
    os.makedirs(p("d,comma"), exist_ok=True)
    np.save(p("d,comma/x.npy"), x)


if __name__ == "__main__":
    main()
