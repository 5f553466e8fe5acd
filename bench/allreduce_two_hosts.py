"""Gradients across two hosts in float32 against bfloat16 (graphrun
--allreduce-dtype), over a link of a given speed, on one machine.

    allreduce_two_hosts.py BUILD-DIR [RATES] [STEPS]

Two network namespaces joined by a bridge
(test/tools/graphrun/multi-worker/netns_hosts.py, as two-hosts.test makes
them), one worker in each, TCP alone between them (btl tcp,self: no shared memory), each host's
sending shaped by a token bucket (`tc qdisc ... tbf rate R`) for every R of
RATES (comma-separated tc rates, "none" for the bare veth; default
none,10gbit,1gbit). For each: bench/mpi-allreduce's median all-reduce of
the seed CNN's 93,322 gradients (a bare float32 MPI_Allreduce, ours in
fp32, ours in bf16), and the seed CNN trained for STEPS steps (default 60,
synthetic data, global batch 256, 1 thread a worker) in fp32 and in bf16:
the median step and the step timer's cross-worker all-reduce. Needs root
and iproute2; removes what it made, whatever happens.
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "tools", "graphrun",
                                "multi-worker"))
from netns_hosts import TwoHosts  # noqa: E402


def sh(*args, check=True, env=None):
    """Runs a command, 120 s at most. (A launch through the namespaces used
    to hang now and then: Open MPI's remote daemon crashing at start-up,
    which TwoHosts' mpirun line now avoids.)"""
    try:
        r = subprocess.run(list(args), capture_output=True, text=True,
                           env=env, timeout=120)
    except subprocess.TimeoutExpired:
        sys.exit(f"allreduce_two_hosts: {' '.join(args)} ran 120 s")
    if check and r.returncode != 0:
        sys.exit(f"allreduce_two_hosts: {' '.join(args)} failed "
                 f"({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def main():
    build = os.path.abspath(sys.argv[1])
    rates = (sys.argv[2] if len(sys.argv) > 2 else "none,10gbit,1gbit").split(",")
    steps = sys.argv[3] if len(sys.argv) > 3 else "60"
    work = tempfile.mkdtemp()
    hosts = TwoHosts(work, "ga", "10.79")
    mpirun = hosts.mpirun + ["-x", "MALLOC_MMAP_THRESHOLD_=4294967296",
                             "-x", "MALLOC_TRIM_THRESHOLD_=4294967296"]
    env = hosts.env
    print("machine: %d cores, load average %s" % (
        os.cpu_count(), open("/proc/loadavg").read().split()[:3]))
    plan = os.path.join(work, "cnn.plan")
    sh(f"{build}/bin/graph-import",
       os.path.join(os.path.dirname(__file__), "..", "examples",
                    "fashion_mnist_cnn.json"),
       "--batch-size", "256", "-o", os.path.join(work, "cnn.mlir"))
    sh(f"{build}/bin/graphc", os.path.join(work, "cnn.mlir"), "--replicas",
       "2", "-o", plan)
    with hosts:
        print("two hosts: network namespaces joined by a bridge, TCP only")
        print("%-8s %-5s %12s %12s %12s %12s" % (
            "link", "wire", "MPI f32 ms", "ours ms", "step ms",
            "across ms"))
        for rate in rates:
            for i, ns in enumerate(hosts.names):
                dev = hosts.inner(i)
                sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev",
                   dev, "root", check=False)
                if rate != "none":
                    sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev",
                       dev, "root", "tbf", "rate", rate, "burst", "256kb",
                       "latency", "50ms")
            for dtype in ("fp32", "bf16"):
                r = sh(*mpirun, f"{build}/bin/mpi-allreduce", "--reps", "300",
                       "--dtype", dtype, env=env)
                medians = re.findall(r"\s([0-9.]+)\n", r.stdout)
                t = sh(*mpirun, f"{build}/bin/graphrun", plan, "--cpus", "1",
                       "--data", "synthetic", "--steps", steps,
                       "--no-progress", "--collective-timeout", "20",
                       "--allreduce-dtype", dtype, env=env)
                step = re.search(r"median ([0-9.]+) sec", t.stdout).group(1)
                across = re.search(r"across workers ([0-9.]+) sec",
                                   t.stdout).group(1)
                print("%-8s %-5s %12s %12s %12.1f %12.2f" % (
                    rate, dtype, medians[0], medians[1], 1e3 * float(step),
                    1e3 * float(across)))
        return 0


if __name__ == "__main__":
    sys.exit(main())
