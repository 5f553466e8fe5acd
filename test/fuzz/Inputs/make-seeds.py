"""Writes the seed inputs of the data-reader fuzzers (test/fuzz/*-reader.test,
jpeg-decoder.test): small valid files of each format, in the forms the
readers take apart (dtypes, byte orders, memory orders, compression), so
that the fuzzer starts from the readers' accepting paths. Run from any
folder with numpy and Pillow: python3 make-seeds.py; the files are kept in
the repository."""

import gzip
import io
import os
import struct

import numpy as np
from PIL import Image

here = os.path.dirname(os.path.abspath(__file__))


def out(folder, name, data):
    os.makedirs(os.path.join(here, folder), exist_ok=True)
    with open(os.path.join(here, folder, name), "wb") as f:
        f.write(data)


def npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4)).astype(np.float32)
seeds = {
    "f32.npy": x,
    "f64-fortran.npy": np.asfortranarray(x.astype(np.float64)),
    "f16-big-endian.npy": x.astype(">f2"),
    "i64.npy": np.arange(6, dtype=np.int64).reshape(2, 3),
    "u8-images.npy": rng.integers(0, 255, (2, 3, 3, 1), dtype=np.uint8),
    "bool.npy": np.array([True, False, True]),
    "i8-0d.npy": np.array(-3, dtype=np.int8),
    "u32-empty.npy": np.zeros((0, 5), dtype=np.uint32),
}
for name, array in seeds.items():
    out("numpy-reader", name, npy(array))
for name, save in (("stored.npz", np.savez), ("deflated.npz", np.savez_compressed)):
    buf = io.BytesIO()
    save(buf, x=x, y=np.array([1, 0, 2], dtype=np.int32))
    out("numpy-reader", name, buf.getvalue())

out("csv-reader", "plain.csv", b"a,b,label\n1,2.5,0\n-3e2,4,1\n")
out("csv-reader", "quoted-crlf.csv",
    b'"x ""1""", y ,z\r\n 1 ,"2",3\r\n\r\n4,5,6')

images = rng.integers(0, 255, (2, 3, 3), dtype=np.uint8)
ubyte = struct.pack(">BBBBIII", 0, 0, 0x08, 3, 2, 3, 3) + images.tobytes()
out("idx-reader", "images-ubyte.idx", ubyte)
out("idx-reader", "labels-ubyte.idx.gz",
    gzip.compress(struct.pack(">BBBBI", 0, 0, 0x08, 1, 3) + bytes([1, 0, 9]), mtime=0))
out("idx-reader", "features-float32.idx",
    struct.pack(">BBBBII", 0, 0, 0x0D, 2, 2, 2) + x[:2, :2].astype(">f4").tobytes())

# The decoder's fuzzer reads a request byte, then the file (JpegFuzzer.cpp):
# 0 asks for the file's own channels, 4 the fast IDCT, 8 DCT scaling to 28.
pixels = rng.integers(0, 255, (20, 36, 3), dtype=np.uint8)
for name, mode, options, request in (
        ("rgb-420", "RGB", {"quality": 75}, 0),
        ("rgb-444-scaled", "RGB", {"quality": 90, "subsampling": 0}, 8),
        ("gray-fast", "L", {"quality": 75}, 4),
        ("rgb-progressive", "RGB", {"quality": 75, "progressive": True}, 0),
        ("cmyk", "CMYK", {"quality": 75}, 3)):
    buf = io.BytesIO()
    Image.fromarray(pixels).convert(mode).save(buf, "JPEG", **options)
    out("jpeg-decoder", name + ".bin", bytes([request]) + buf.getvalue())

# safetensors as graphrun's checkpoints and --save-weights write them: an
# 8-byte header length, the JSON header, the tensors tiling the data.
def safetensors(tensors, metadata):
    import json
    header, data = {}, b""
    for name, array in tensors.items():
        raw = array.tobytes()
        dtype = {"float32": "F32", "int64": "I64", "uint16": "BF16"}[array.dtype.name]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


out("safetensors-reader", "checkpoint.safetensors", safetensors(
    {"conv2d/kernel": x.reshape(3, 2, 2, 1), "dense/bias": x[0],
     "iterations": np.array([40], dtype=np.int64)},
    {"global_step": "40", "format": "graph-checkpoint"}))
out("safetensors-reader", "bf16-and-empty.safetensors", safetensors(
    {"w": np.array([0x3F80, 0xC000], dtype=np.uint16),
     "empty": np.zeros((0, 3), dtype=np.float32)}, None))

# Inputs the fuzzers found faults with, now refused cleanly (each test runs
# them first). A 13-byte IDX file declaring 8x529205251 float32s (16.9 GB,
# allocated before the file was found short); an .npz whose directory
# declares 4 GB of compressed bytes in a file of a few hundred (reserved
# before the read found the lie); a 2 kB JPEG whose frame declares
# 20000x20000 (1.2 GB zero-filled before the data ran out); a safetensors
# header with a number past a double's range (an exception out of the
# reader: the process aborted); a .npy of shape (0, 6472469950663476972, 37),
# empty but with rows whose size overflowed (undefined behaviour).
out("idx-reader-regressions", "declares-16.9GB.idx",
    bytes([0, 0, 0x0D, 2, 0, 0, 0, 8, 0x1F, 0x8B, 8, 3, 0]))
buf = io.BytesIO()
np.savez_compressed(buf, x=x)
raw = bytearray(buf.getvalue())
cd = raw.index(b"PK\x01\x02")
raw[cd + 20:cd + 28] = struct.pack("<II", 0xFFFFFF00, 0xFFFFFFF0)
out("numpy-reader-regressions", "declares-4GB-compressed.npz", bytes(raw))
buf = io.BytesIO()
Image.fromarray(pixels).save(buf, "JPEG", quality=75)
raw = bytearray(buf.getvalue())
sof = raw.index(b"\xff\xc0")
raw[sof + 5:sof + 9] = struct.pack(">HH", 20000, 20000)
out("jpeg-decoder-regressions", "declares-20000x20000.bin", bytes([3]) + bytes(raw))
header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4e400]}}'
out("safetensors-reader-regressions", "number-overflow.safetensors",
    struct.pack("<Q", len(header)) + header + bytes(4))
header = b"{'descr': '>f2', 'fortran_order': False, 'shape': (0, 6472469950663476972, 37), }"
header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
out("numpy-reader-regressions", "empty-rows-overflow.npy",
    b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
