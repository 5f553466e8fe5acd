"""Run under `mpirun -np 2 python mpi_fit.py OUT.npz`: each process is a
worker of one fit; the chief writes the trained variables to OUT.npz."""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "numpy")
import keras
import numpy as np

import graphc
from conftest import FASHION, mlp, read_idx

x = (read_idx(f"{FASHION}/train-images-idx3-ubyte.gz")[:6000].reshape(-1, 784)
     .astype(np.float32) / 255.0)
y = read_idx(f"{FASHION}/train-labels-idx1-ubyte.gz")[:6000]
keras.utils.set_random_seed(7)
trainer = graphc.compile(mlp(keras), batch_size=200, devices="cpu:1")
history = trainer.fit(x, y, epochs=2, shuffle=False, verbose=0)
assert graphc.distribute.num_workers() == 2, graphc.distribute.num_workers()
print(f"worker {graphc.distribute.worker_index()}: step {trainer.step}, "
      f"loss {history.history['loss'][-1]:.4f}", flush=True)
if graphc.distribute.is_chief():
    np.savez(sys.argv[1], **{k.replace("/", "."): v
                             for k, v in trainer.get_weights().items()})
