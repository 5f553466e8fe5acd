"""Two hosts on one machine: a network namespace each, joined by a bridge in
the root namespace (NET.1 on the bridge, NET.2 and NET.3 inside), and the
mpirun command line that launches one worker in each through an `ip netns
exec` agent (no ssh: plm_rsh_agent), TCP alone between them (btl tcp,self:
no shared memory), its out-of-band traffic on the bridge.

    with TwoHosts(work, "gh", "10.78") as hosts:
        subprocess.run(hosts.mpirun + [...], env=hosts.env)

Used by two_hosts.py (two-hosts.test) and bench/allreduce_two_hosts.py.
Leaving the block kills what runs in the namespaces and removes them, the
veths and the bridge, whatever happened. Needs root and iproute2.
"""

import os
import subprocess


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True,
                          text=True)


def namespace_pids(ns):
    r = sh("ip", "netns", "pids", ns, check=False)
    return [int(p) for p in r.stdout.split()]


class TwoHosts:
    def __init__(self, work, prefix, net_prefix):
        tag = str(os.getpid() % 10000)
        self.net = f"{net_prefix}.{os.getpid() % 250 + 1}"
        self.bridge = f"{prefix}br{tag}"
        self.names = [f"{prefix}{tag}a", f"{prefix}{tag}b"]
        agent = os.path.join(work, "netns-agent.sh")
        with open(agent, "w") as f:
            f.write('#!/bin/sh\n# plm_rsh_agent: HOST COMMAND...; HOST is a '
                    'network namespace\nhost="$1"; shift\n'
                    'exec ip netns exec "$host" /bin/sh -c "$*"\n')
        os.chmod(agent, 0o755)
        # rtc_hwloc_vmhole none: Open MPI 4.1's remote daemon (orted) maps
        # its hwloc topology at an address it guesses from its own memory
        # map, and now and then that write crashes it (SIGSEGV in
        # hwloc_shmem_topology_write); mpirun then waits for it forever.
        # Seen in 4 of 100 launches here (0 of 200 with the option), and
        # in 8 to 12 of 150 with a plain local agent, no namespaces (0 of
        # 150 with it): docs/multi-worker.md.
        self.mpirun = [
            "mpirun", "--host", ",".join(self.names), "-np", "2",
            "--bind-to", "none", "--mca", "plm_rsh_agent", agent, "--mca",
            "plm_rsh_no_tree_spawn", "1", "--mca", "rtc_hwloc_vmhole",
            "none", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", f"{self.net}.0/24", "--mca",
            "oob_tcp_if_include", f"{self.net}.0/24"]
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def inner(self, i):
        """Host i's end of its veth (inside its namespace)."""
        return f"{self.names[i]}i"

    def __enter__(self):
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", f"{self.net}.1/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
            for i, ns in enumerate(self.names):
                sh("ip", "netns", "add", ns)
                outer, inner = f"{ns}o", self.inner(i)
                sh("ip", "link", "add", outer, "type", "veth", "peer", "name",
                   inner)
                sh("ip", "link", "set", inner, "netns", ns)
                sh("ip", "link", "set", outer, "master", self.bridge)
                sh("ip", "link", "set", outer, "up")
                sh("ip", "netns", "exec", ns, "ip", "addr", "add",
                   f"{self.net}.{i + 2}/24", "dev", inner)
                sh("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up")
                sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in self.names:
            for pid in namespace_pids(ns):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            sh("ip", "netns", "del", ns, check=False)
            sh("ip", "link", "del", f"{ns}o", check=False)
        sh("ip", "link", "del", self.bridge, check=False)
        return False
