#!/usr/bin/env python3
"""Writes a Keras 3 Sequential model of N layers to stdout, for
bench/import-scale.sh: an InputLayer of 4 features, N - 2 Dense(4, relu)
layers and a Dense(10, softmax) head, compiled with
categorical_crossentropy and SGD (the importer needs a loss it supports).
The configs are minimal, one short line a layer, so the file stays small.

  import_scale_model.py N
"""

import json
import sys


def main():
    layers = int(sys.argv[1])
    if layers < 3:
        sys.exit("import_scale_model.py: N must be at least 3")
    out = sys.stdout
    out.write('{"class_name": "Sequential", "config": {"name": "chain", '
              '"layers": [\n')
    out.write('{"class_name": "InputLayer", "config": {"name": "input", '
              '"batch_shape": [null, 4]}},\n')
    for i in range(1, layers - 1):
        out.write('{"class_name": "Dense", "config": {"name": "dense_%d", '
                  '"units": 4, "activation": "relu"}},\n' % i)
    out.write('{"class_name": "Dense", "config": {"name": "head", '
              '"units": 10, "activation": "softmax"}}\n')
    compile_config = {"loss": "categorical_crossentropy",
                      "optimizer": {"class_name": "SGD",
                                    "config": {"learning_rate": 0.01}}}
    out.write(']}, "compile_config": %s}\n' % json.dumps(compile_config))


if __name__ == "__main__":
    main()
