"""The job's workers. Under `mpirun -np N python train.py` each process is a
worker: graphc joins them through MPI itself, as graphrun does, and every
worker runs the same fit (each on its share of the data; the chief alone
prints and writes files)."""

from . import _graphc


def worker_index():
    """This process's rank: 0 (the chief) alone, or under mpirun."""
    return _graphc.worker_index()


def num_workers():
    """The workers of the job: 1 alone, mpirun's -np under it."""
    return _graphc.num_workers()


def is_chief():
    return worker_index() == 0
