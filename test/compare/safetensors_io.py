"""safetensors by hand, for tests: no pip package, nothing but the format.

A file is an 8-byte little-endian header length N, N bytes of JSON
({"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"}),
then the tensors' little-endian bytes. Only what graphrun writes is read
(F32 and F64); graphrun's own reader is the strict one.

As a tool, it derives a faulty weights file from a good one, for graphrun's
error tests:
  safetensors_io.py IN OUT --drop NAME | --add NAME | --transpose NAME |
                           --to-f64 NAME | --only PREFIX

and --only keeps the tensors whose names begin with PREFIX, to compare part
of two files with cmp.
"""

import argparse
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8"}


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(
            data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(
                info["shape"]).copy()
    return tensors


def write(path, tensors):
    header, offset, chunks = {}, 0, []
    for name, array in tensors.items():
        dtype = "F64" if array.dtype == np.float64 else "F32"
        raw = np.ascontiguousarray(array, dtype=DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        chunks.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def main():
    parser = argparse.ArgumentParser(description="derive a faulty file")
    parser.add_argument("input")
    parser.add_argument("output")
    edit = parser.add_mutually_exclusive_group(required=True)
    edit.add_argument("--drop", help="remove this tensor")
    edit.add_argument("--add", help="add a [1] tensor of this name")
    edit.add_argument("--transpose", help="reverse this tensor's axes")
    edit.add_argument("--to-f64", help="store this tensor as F64")
    edit.add_argument("--only", help="keep only the tensors named PREFIX...")
    args = parser.parse_args()
    tensors = read(args.input)
    if args.drop:
        del tensors[args.drop]
    elif args.add:
        tensors[args.add] = np.zeros(1, np.float32)
    elif args.only:
        tensors = {name: value for name, value in tensors.items()
                   if name.startswith(args.only)}
    elif args.transpose:
        tensors[args.transpose] = tensors[args.transpose].transpose()
    else:
        tensors[args.to_f64] = tensors[args.to_f64].astype(np.float64)
    write(args.output, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
