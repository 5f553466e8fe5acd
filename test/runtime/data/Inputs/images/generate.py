#!/usr/bin/python3
"""Makes the JPEG fixtures of ImageDecodeTest and PIL's decode of each.

Run with Debian's /usr/bin/python3 (python3-pil, python3-numpy): its PIL
decodes with libjpeg-turbo, the library runtime/data/JpegDecoder.cpp calls
through TurboJPEG, so the .rgb/.gray files are libjpeg-turbo's reference
pixels, raw bytes in row-major HxWxC order. Deterministic: the same files on
every run. The tests read the committed files; rerun this only to change
them.

  test/runtime/data/Inputs/images/generate.py
"""
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def photo(height, width, channels, seed):
    """Smooth gradients, a disc and noise: edges and texture to decode."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    planes = []
    for c in range(channels):
        g = 128 + 90 * np.sin(x / (3.0 + c) + y / 7.0 + c)
        g += 60 * ((x - width / 2) ** 2 + (y - height / 3) ** 2 < (height / 3) ** 2)
        g += rng.normal(0, 12, size=(height, width))
        planes.append(g)
    a = np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)
    return a[..., 0] if channels == 1 else a


def dump(image, name):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(np.asarray(image).tobytes())


def decoded(path, mode, scale=1):
    im = Image.open(path)
    if scale > 1 or im.mode != mode:
        # draft() asks libjpeg itself for the mode and a 1/scale size: a
        # grayscale decode of a colour file is then libjpeg's luma (Y), the
        # DCT-scaled decode libjpeg's, as TurboJPEG gives them.
        w, h = im.size
        im.draft(mode, ((w + scale - 1) // scale, (h + scale - 1) // scale))
    im.load()
    assert im.mode == mode, (path, im.mode)
    return im


def main():
    fixtures = [
        # name, height, width, channels, save options
        ("rgb420", 29, 37, 3, dict(quality=75, subsampling=2)),
        ("rgb444", 20, 24, 3, dict(quality=90, subsampling=0)),
        ("gray", 23, 31, 1, dict(quality=85)),
        ("photo", 96, 128, 3, dict(quality=90, subsampling=2)),
    ]
    for seed, (name, h, w, c, opts) in enumerate(fixtures):
        path = os.path.join(HERE, name + ".jpeg")
        Image.fromarray(photo(h, w, c, seed)).save(path, "JPEG", **opts)
        mode = "RGB" if c == 3 else "L"
        dump(decoded(path, mode), name + (".rgb" if c == 3 else ".gray"))
    # Colour to grayscale (libjpeg's luma); grayscale to colour, where
    # libjpeg replicates Y into R, G and B, as PIL's convert does.
    dump(decoded(os.path.join(HERE, "rgb420.jpeg"), "L"), "rgb420.gray")
    dump(decoded(os.path.join(HERE, "gray.jpeg"), "L").convert("RGB"), "gray.rgb")
    # A CMYK JPEG, as Photoshop writes them (PIL writes the Adobe marker
    # and inverted values): TensorFlow decodes it to RGB (generate-tf.py
    # gives its pixels); PIL's own RGB of it is no reference.
    cmyk = Image.fromarray(photo(40, 56, 3, 7)).convert("CMYK")
    cmyk.save(os.path.join(HERE, "cmyk.jpeg"), "JPEG", quality=90)
    # DCT-scaled decodes of the 128x96 photo.
    for scale in (2, 4, 8):
        im = decoded(os.path.join(HERE, "photo.jpeg"), "RGB", scale)
        assert im.size == (128 // scale, 96 // scale), im.size
        dump(im, "photo.scale%d.rgb" % scale)


if __name__ == "__main__":
    main()
