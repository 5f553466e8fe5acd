"""`mpirun -np 2 python`: two workers' fit equals one process's 2 replicas."""

import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

import graphc
from conftest import FASHION, mlp, read_idx

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_two_workers_equal_one_process_with_two_replicas(tmp_path):
    out = tmp_path / "w2x1.npz"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join([HERE] + sys.path))
    run = subprocess.run(
        ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2",
         sys.executable, os.path.join(HERE, "mpi_fit.py"), str(out)],
        env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "worker 0: step 60" in run.stdout and "worker 1: step 60" in run.stdout
    workers = dict(np.load(out))

    x = (read_idx(f"{FASHION}/train-images-idx3-ubyte.gz")[:6000]
         .reshape(-1, 784).astype(np.float32) / 255.0)
    y = read_idx(f"{FASHION}/train-labels-idx1-ubyte.gz")[:6000]
    keras.utils.set_random_seed(7)
    trainer = graphc.compile(mlp(keras), batch_size=200, devices="cpu:2")
    trainer.fit(x, y, epochs=2, shuffle=False, verbose=0)
    ours = {k.replace("/", "."): v for k, v in trainer.get_weights().items()}
    assert set(ours) == set(workers)
    worst = max(float(np.max(np.abs(ours[k] - workers[k]))) for k in ours)
    assert worst < 1e-4, worst
