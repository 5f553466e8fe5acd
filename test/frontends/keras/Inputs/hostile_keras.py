#!/usr/bin/env python3
"""Writes hostile importer inputs for the lit tests, so that no large or
deliberately broken file needs committing.

  hostile_keras.py deep-json DEPTH {array,object,unclosed,string}
      JSON nested DEPTH deep, to stdout; `string` is a list holding one
      string of DEPTH brackets and escaped quotes, nested 1 deep.
  hostile_keras.py deep-in-model MODEL.json DEPTH
      MODEL with one extra field nested DEPTH deep, to stdout.
  hostile_keras.py chain N {forward,reverse}
      A functional model: an input and a chain of N ReLU layers, listed in
      call order or backwards, to stdout.
  hostile_keras.py keras OUT.keras CONFIG [--declare-size N] [--deflate]
      A .keras archive whose config.json holds the file CONFIG; with
      --declare-size its headers claim N bytes uncompressed (ZIP64 when N
      does not fit 32 bits), whatever CONFIG holds.
  hostile_keras.py tamper IN.keras OUT.keras OLD NEW
      IN with the bytes OLD replaced by NEW (same length) and its CRCs left
      alone: a corrupt archive whose headers still look right.
"""

import json
import struct
import sys
import zlib


def deep_json(depth, shape):
    if shape == "array":
        return "[" * depth + "]" * depth
    if shape == "object":
        return '{"a":' * depth + "1" + "}" * depth
    if shape == "string":
        return '["' + '\\"[{' * depth + '"]'
    return "[" * depth  # unclosed


def chain(length, order):
    def relu(i):
        source = "relu_%d" % (i - 1) if i else "input"
        tensor = {"class_name": "__keras_tensor__",
                  "config": {"keras_history": [source, 0, 0]}}
        return {"class_name": "ReLU", "name": "relu_%d" % i,
                "config": {"name": "relu_%d" % i},
                "inbound_nodes": [{"args": [tensor], "kwargs": {}}]}
    layers = [relu(i) for i in range(length)]
    if order == "reverse":
        layers.reverse()
    first = {"class_name": "InputLayer", "name": "input",
             "config": {"name": "input", "batch_shape": [None, 4]},
             "inbound_nodes": []}
    return {"class_name": "Functional",
            "config": {"name": "chain", "layers": [first] + layers,
                       "input_layers": [["input", 0, 0]],
                       "output_layers": [["relu_%d" % (length - 1), 0, 0]]}}


def zip_archive(name, data, declared_size, deflate):
    """One entry; the headers declare `declared_size` bytes uncompressed."""
    payload = zlib.compress(data)[2:-4] if deflate else data
    method = 8 if deflate else 0
    crc = zlib.crc32(data)
    name = name.encode()
    zip64 = declared_size >= 0xFFFFFFFF or len(payload) >= 0xFFFFFFFF
    size32 = 0xFFFFFFFF if zip64 else declared_size
    comp32 = 0xFFFFFFFF if zip64 else len(payload)
    # ZIP64 extended information: uncompressed then compressed size.
    extra = (struct.pack("<HHQQ", 1, 16, declared_size, len(payload))
             if zip64 else b"")
    version = 45 if zip64 else 20
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, version, 0, method, 0, 0,
                        crc, comp32, size32, len(name), len(extra))
    local += name + extra + payload
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, version, version,
                          0, method, 0, 0, crc, comp32, size32, len(name),
                          len(extra), 0, 0, 0, 0, 0)
    central += name + extra
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central),
                      len(local), 0)
    return local + central + end


def main(argv):
    command = argv[1]
    if command == "deep-json":
        sys.stdout.write(deep_json(int(argv[2]), argv[3]) + "\n")
    elif command == "deep-in-model":
        with open(argv[2]) as f:
            model = f.read()
        depth = int(argv[3])
        # A field of the first layer's config: valid JSON, a valid model
        # shape around it, and the nesting where a real config has its own.
        at = model.index('"config"', model.index('"layers"'))
        at = model.index("{", at) + 1
        field = '"deep": ' + deep_json(depth, "array") + ", "
        sys.stdout.write(model[:at] + field + model[at:])
    elif command == "chain":
        json.dump(chain(int(argv[2]), argv[3]), sys.stdout)
        sys.stdout.write("\n")
    elif command == "keras":
        with open(argv[3], "rb") as f:
            config = f.read()
        declared = len(config)
        if "--declare-size" in argv:
            declared = int(argv[argv.index("--declare-size") + 1])
        with open(argv[2], "wb") as f:
            f.write(zip_archive("config.json", config, declared,
                                "--deflate" in argv))
    elif command == "tamper":
        with open(argv[2], "rb") as f:
            data = f.read()
        old, new = argv[4].encode(), argv[5].encode()
        assert len(old) == len(new) and old in data
        with open(argv[3], "wb") as f:
            f.write(data.replace(old, new, 1))
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main(sys.argv)
