"""The peers of bench/image-decode.sh: the same image folder decoded, resized
and batched by PIL and by tf.data, and TF's pixels to compare ours with.

  python3 bench/image_decode_peers.py photos DIR COUNT [--smooth]
  python3 bench/image_decode_peers.py pil DIR HxWxC [--dct] [--processes 2]
  KERAS_PYTHON bench/image_decode_peers.py tf DIR HxWxC [--threads 2]
  KERAS_PYTHON bench/image_decode_peers.py tf-parity DUMP HxWxC MODE
      MODE: decode (ours --fast-idct at the file's size, raw, against
      decode_jpeg's default), decode-accurate (ours without, against
      dct_method="INTEGER_ACCURATE"), resize (ours --fast-idct
      --no-dct-scaling against decode_jpeg + convert_image_dtype +
      image.resize), resize-legacy (ours also --resize legacy, against
      compat.v1.image.resize_bilinear)

Both peers read the files in the order our listing does (classes sorted,
then paths, byte order), run 2 workers (PIL: processes, as a PyTorch
DataLoader does; tf.data: threads), batch 32 (dropping the remainder, as
graphrun does) and time from the first batch to the last, so
that start-up (thread pools, TF's tracing) is left out of the rate, as it is
for ours. The photos are grayscale 512x496 JPEGs (quality 90) of banded
speckle, the size and kind of the OCT2017 scans, in four class folders; with
--smooth, colour waves with little noise instead, where decoding costs less
and DCT scaling saves a larger share of it.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

BATCH = 32
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".JPG", ".JPEG")


def listing(root):
    """(paths, labels, classes) in the order runtime/data/ImageFolder lists."""
    classes = sorted(e for e in os.listdir(root)
                     if not e.startswith(".")
                     and os.path.isdir(os.path.join(root, e)))
    paths, labels = [], []
    for label, name in enumerate(classes):
        found = []
        for folder, dirs, files in os.walk(os.path.join(root, name),
                                           followlinks=True):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [os.path.join(folder, f) for f in files
                      if not f.startswith(".") and f.endswith(IMAGE_EXTENSIONS)]
        found.sort(key=os.fsencode)
        paths += found
        labels += [label] * len(found)
    return paths, labels, classes


def parse_shape(text):
    h, w, c = (int(v) for v in text.split("x"))
    return h, w, c


def report(name, images, seconds, cpu, extra):
    """cpu: the process's CPU seconds (every thread), which a shared
    machine's other jobs move less than the wall clock."""
    print(f"{name}: {images} images {extra}: {seconds:.3f} s, "
          f"{images / seconds:.0f} images/s, {1e3 * cpu / images:.3f} "
          "cpu-ms/image (first batch excluded)")


def make_photos(root, count, smooth):
    from PIL import Image
    stamp_path = os.path.join(root, ".complete")
    stamp = {"count": count, "size": [512, 496], "quality": 90,
             "kind": "smooth" if smooth else "speckle"}
    try:
        with open(stamp_path) as f:
            if json.load(f) == stamp:
                print(f"{root}: {count} photos ready")
                return
    except (OSError, ValueError):
        pass
    rng = np.random.default_rng(0)
    classes = ["CNV", "DME", "DRUSEN", "NORMAL"]
    y = np.arange(496, dtype=np.float32)[:, None]
    x = np.arange(512, dtype=np.float32)[None, :]
    for i in range(count):
        name = classes[i % len(classes)]
        os.makedirs(os.path.join(root, name), exist_ok=True)
        if smooth:
            # Colour waves and mild noise (4:2:0): little entropy, so the
            # inverse DCT and upsampling weigh more in a decode.
            planes = [128 + 100 * np.sin(x / (40 + 5 * c + i % 7)
                                         + y / (55 + 3 * c) + i)
                      + rng.normal(0, 3, size=(496, 512)) for c in range(3)]
            img = np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)
            Image.fromarray(img, mode="RGB").save(
                os.path.join(root, name, f"{i:05d}.jpeg"), "JPEG", quality=90)
            continue
        # Bright bands that bend across the width, like retinal layers,
        # under speckle: the texture (and so the entropy) of an OCT scan.
        bend = 40 * np.sin(x / (60 + 7 * (i % 5)) + i)
        band = np.exp(-((y - 250 - bend) / (30 + i % 20)) ** 2)
        band += 0.5 * np.exp(-((y - 320 - bend) / 12) ** 2)
        img = 30 + 170 * band
        img = img * rng.gamma(4.0, 0.25, size=(496, 512))
        img = np.clip(img, 0, 255).astype(np.uint8)
        Image.fromarray(img, mode="L").save(
            os.path.join(root, name, f"{i:05d}.jpeg"), "JPEG", quality=90)
    with open(stamp_path, "w") as f:
        json.dump(stamp, f)
    kind = "smooth colour" if smooth else "grayscale speckle"
    print(f"{root}: wrote {count} photos, 512x496 {kind}, quality 90")


def pil_load(path, shape, dct):
    from PIL import Image
    h, w, c = shape
    mode = "RGB" if c == 3 else "L"
    im = Image.open(path)
    if dct:
        im.draft(mode, (w, h))  # libjpeg's DCT scaling, as ours does
    im = im.convert(mode)
    if im.size != (w, h):
        im = im.resize((w, h), Image.BILINEAR)
    a = np.asarray(im, dtype=np.float32) / 255.0
    return a.reshape(h, w, c)


def pil_batch(job):
    """One batch, decoded in a worker process: what a PyTorch DataLoader
    worker does (decode, resize, scale, stack), handed back whole."""
    paths, shape, dct = job
    return np.stack([pil_load(p, shape, dct) for p in paths])


def run_pil(root, shape, dct, processes):
    import multiprocessing
    h, w, c = shape
    paths, labels, classes = listing(root)
    eye = np.eye(len(classes), dtype=np.float32)
    n = len(paths) // BATCH * BATCH
    jobs = [(paths[b:b + BATCH], shape, dct) for b in range(0, n, BATCH)]
    images = 0
    # Processes, not threads: PIL holds the GIL in parts of a decode and in
    # the resize, so threads would understate it.
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        pids = [os.getpid()] + [w.pid for w in pool._pool]
        start = None
        for b, x in enumerate(pool.imap(pil_batch, jobs, chunksize=1)):
            y = eye[labels[b * BATCH:(b + 1) * BATCH]]
            assert len(y) == len(x)
            if start is None:
                start, cpu = time.perf_counter(), cpu_seconds(pids)
            else:
                images += len(x)
        seconds, cpu = time.perf_counter() - start, cpu_seconds(pids) - cpu
    report("pil", images, seconds, cpu,
           f"at {h}x{w}x{c}, {processes} processes, batch {BATCH}, draft "
           f"(DCT scaling) {'on' if dct else 'off'}")


def cpu_seconds(pids):
    """CPU seconds (user and system) the processes `pids` have used so far."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def tensorflow(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    return tf


def tf_load(tf, shape, legacy=False):
    h, w, c = shape

    def load(path):
        img = tf.io.decode_jpeg(tf.io.read_file(path), channels=c)
        img = tf.image.convert_image_dtype(img, tf.float32)
        if legacy:  # TF 1's resize_bilinear(align_corners=False)
            return tf.compat.v1.image.resize_bilinear(
                img[None], (h, w), align_corners=False,
                half_pixel_centers=False)[0]
        return tf.image.resize(img, (h, w))  # bilinear, half-pixel centres
    return load


def run_tf(root, shape, threads):
    tf = tensorflow(threads)
    paths, labels, classes = listing(root)
    load = tf_load(tf, shape)
    k = len(classes)
    ds = tf.data.Dataset.from_tensor_slices((paths, labels))
    ds = ds.map(lambda p, l: (load(p), tf.one_hot(l, k)),
                num_parallel_calls=threads)
    ds = ds.batch(BATCH, drop_remainder=True).prefetch(2)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    ds = ds.with_options(options)
    images, start = 0, None
    for x, _ in ds:
        if start is None:
            start, cpu = time.perf_counter(), time.process_time()
        else:
            images += int(x.shape[0])
    h, w, c = shape
    report(f"tf.data (tensorflow {tf.__version__})", images,
           time.perf_counter() - start, time.process_time() - cpu,
           f"at {h}x{w}x{c}, {threads} threads, batch {BATCH}")


def tf_parity(dump, shape, mode):
    """Our dumped examples against TF's for the same files."""
    tf = tensorflow(2)
    h, w, c = shape
    with open(dump + ".paths") as f:
        paths = [line.rstrip("\n") for line in f]
    ours = np.fromfile(dump, dtype=np.float32).reshape(len(paths), h, w, c)
    if mode.startswith("decode"):
        # The files at their own size, raw: TF's decode_jpeg, byte for byte,
        # with its default IDCT (dct_method="", the fast one) or the
        # accurate one.
        method = "INTEGER_ACCURATE" if mode == "decode-accurate" else ""
        theirs = np.stack([tf.io.decode_jpeg(tf.io.read_file(p), channels=c,
                                             dct_method=method).numpy()
                           for p in paths]).astype(np.float32)
        differ = int(np.count_nonzero(ours != theirs))
        print(f"tf-parity {mode}: {len(paths)} files at {h}x{w}x{c}: "
              f"{differ} of {ours.size} pixel values differ from "
              f"tf.io.decode_jpeg(dct_method=\"{method}\")")
    else:
        legacy = mode == "resize-legacy"
        load = tf_load(tf, shape, legacy)
        theirs = np.stack([load(p).numpy() for p in paths])
        diff = np.abs(ours - theirs)
        what = ("compat.v1.image.resize_bilinear" if legacy
                else "image.resize")
        print(f"tf-parity {mode}: {len(paths)} files to {h}x{w}x{c} "
              f"(decode_jpeg, convert_image_dtype, {what}): largest "
              f"|difference| {diff.max():.2e}, mean {diff.mean():.2e} "
              "(in [0, 1] units)")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("photos")
    p.add_argument("dir")
    p.add_argument("count", type=int)
    p.add_argument("--smooth", action="store_true")
    for name in ("pil", "tf"):
        p = sub.add_parser(name)
        p.add_argument("dir")
        p.add_argument("shape", type=parse_shape)
        if name == "pil":
            p.add_argument("--processes", type=int, default=2)
            p.add_argument("--dct", action="store_true")
        else:
            p.add_argument("--threads", type=int, default=2)
    p = sub.add_parser("tf-parity")
    p.add_argument("dump")
    p.add_argument("shape", type=parse_shape)
    p.add_argument("mode", choices=["decode", "decode-accurate", "resize",
                                     "resize-legacy"])
    args = parser.parse_args()
    if args.cmd == "photos":
        make_photos(args.dir, args.count, args.smooth)
    elif args.cmd == "pil":
        run_pil(args.dir, args.shape, args.dct, args.processes)
    elif args.cmd == "tf":
        run_tf(args.dir, args.shape, args.threads)
    else:
        tf_parity(args.dump, args.shape, args.mode)


if __name__ == "__main__":
    sys.exit(main())
