"""Two hosts on one machine: a network namespace each, TCP between them.

    two_hosts.py WORK GRAPHRUN PLAN -- GRAPHRUN-FLAGS...

Makes two network namespaces joined by a bridge in the root namespace
(10.78.<n>.1 on the bridge, .2 and .3 inside), and has Open MPI launch one
worker in each through a launcher agent that runs `ip netns exec` (no ssh:
plm_rsh_agent), with TCP alone between them (btl tcp,self: no shared
memory) and its out-of-band traffic on the bridge. Then:

1. the job trains with GRAPHRUN-FLAGS and --save-weights WORK/w2.safetensors;
2. a second job trains until the chief's first checkpoint, then worker 1's
   link goes down: graphrun must name worker 1 within the collective
   timeout, and no graphrun may remain in either namespace. Open MPI's
   mpirun itself waits for its daemon behind the dead link until TCP gives
   up (minutes): the link comes back once the workers are gone, and mpirun
   must then end within 30 s, leaving no process in either namespace.

The namespaces are removed at the end, whatever happened. Prints what it
saw; exits non-zero on any failure. Needs root and iproute2.
"""

import os
import re
import subprocess
import sys
import time

from netns_hosts import TwoHosts, namespace_pids, sh


def commands(pids):
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                out.append(f.read().strip())
        except OSError:
            pass
    return out


def main():
    work, graphrun, plan = sys.argv[1], sys.argv[2], sys.argv[3]
    assert sys.argv[4] == "--"
    flags = sys.argv[5:]
    with TwoHosts(work, "gh", "10.78") as hosts:
        names, mpirun, env = hosts.names, hosts.mpirun, hosts.env
        print(f"two hosts: namespaces {names[0]} ({hosts.net}.2) and "
              f"{names[1]} ({hosts.net}.3), TCP only")

        # 1. Training across the two.
        weights = os.path.join(work, "w2.safetensors")
        r = subprocess.run(mpirun + [graphrun, plan] + flags +
                           ["--save-weights", weights], env=env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"FAIL: the job failed ({r.returncode}):\n{r.stdout}"
                  f"{r.stderr}")
            return 1
        line = next((l for l in r.stdout.splitlines()
                     if l.startswith("graphrun:") and "workers" in l), "")
        print("job: " + line)

        # 2. One host's link goes down mid-run.
        ckpt = os.path.join(work, "ckpt")
        job = subprocess.Popen(
            mpirun + [graphrun, plan, "--backend", "cpu", "--cpus", "1",
                      "--data", "synthetic", "--steps", "1000000",
                      "--log-every", "0", "--no-progress", "--checkpoint-dir",
                      ckpt, "--checkpoint-every", "20",
                      "--collective-timeout", "3"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        # A loaded machine (CI) may take long to the first checkpoint: wait
        # for it, and say why when it never comes.
        deadline = time.time() + 300
        while not (os.path.isdir(ckpt) and any(
                f.endswith(".safetensors") for f in os.listdir(ckpt))):
            exited = job.poll() is not None
            if time.time() > deadline or exited:
                job.kill()
                output = job.communicate()[0]
                print("FAIL: no checkpoint before the fault (the job %s); "
                      "its output:\n%s" % (
                          "exited %d" % job.returncode if exited else
                          "ran 300 s without one", output))
                return 1
            time.sleep(0.1)
        down = time.time()
        sh("ip", "netns", "exec", names[1], "ip", "link", "set",
           f"{names[1]}i", "down")
        while any("graphrun" in c for ns in names
                  for c in commands(namespace_pids(ns))):
            if time.time() - down > 3 + 5 + 10:
                print("FAIL: graphrun still running 18 s after the link "
                      "went down")
                return 1
            time.sleep(0.1)
        gone = time.time() - down
        sh("ip", "netns", "exec", names[1], "ip", "link", "set",
           f"{names[1]}i", "up")
        try:
            out, _ = job.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            job.kill()
            print("FAIL: mpirun still running 30 s after the link came back")
            return 1
        named = re.search(r"graphrun: error: .*worker 1 \(host [^)]*\) is "
                          r"late[^\n]*", out)
        if not named:
            print(f"FAIL: the late worker was not named:\n{out}")
            return 1
        print(f"link down: every graphrun gone after {gone:.1f} s "
              f"(collective timeout 3 s)")
        print(named.group(0))
        time.sleep(1)
        left = [c for ns in names for c in commands(namespace_pids(ns))]
        print("left behind: " + (", ".join(left) if left else
                                 "no process in either namespace"))
        return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
