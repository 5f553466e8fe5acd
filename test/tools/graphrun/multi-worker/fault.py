"""Injects a fault into one worker of a running multi-worker job.

  fault.py kill|stop|interrupt RANK CKPT_DIR DEADLINE -- mpirun ... graphrun ...

Starts the job, waits until its chief has written a checkpoint in CKPT_DIR
(so the fault lands mid-run), then sends worker RANK SIGKILL (kill) or
SIGSTOP (stop), or sends mpirun itself SIGINT (interrupt: Ctrl-C in the
terminal that started the job; RANK is then ignored). It then waits for the job to end, at most DEADLINE seconds
after the fault, and prints what a user would want to know:

  fault: SIGKILL to worker 1 (pid 1234) after ckpt-20.safetensors
  job: exit status 1 within the deadline
  left behind: no graphrun process
  --- job output ---
  (the job's stdout and stderr)

A job that outlives the deadline is killed and reported as hung.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Inputs"))
from processes import descendants, is_graphrun  # noqa: E402

CHECKPOINT = re.compile(r"ckpt-(\d+)\.safetensors$")


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(item.split(b"=", 1) for item in f.read().split(b"\0")
                        if b"=" in item)
    except OSError:
        return {}


def main():
    mode, rank, ckpt_dir, deadline = sys.argv[1], sys.argv[2], sys.argv[3], \
        float(sys.argv[4])
    if sys.argv[5] != "--":
        sys.exit("usage: fault.py kill|stop|interrupt RANK CKPT_DIR DEADLINE "
                 "-- CMD...")
    command = sys.argv[6:]
    log = open(ckpt_dir + ".log", "w+b")
    job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    start = time.monotonic()
    while True:
        if job.poll() is not None:
            log.seek(0)
            sys.stdout.write(log.read().decode(errors="replace"))
            sys.exit(f"the job ended (status {job.returncode}) before a "
                     "checkpoint: make it longer")
        names = os.listdir(ckpt_dir) if os.path.isdir(ckpt_dir) else []
        done = sorted(n for n in names if CHECKPOINT.match(n))
        if done:
            break
        if time.monotonic() - start > 120:
            job.kill()
            sys.exit("no checkpoint after 120 s")
        time.sleep(0.05)
    workers = [p for p in descendants(job.pid) if is_graphrun(p)]
    target = [p for p in workers
              if environ(p).get(b"OMPI_COMM_WORLD_RANK") == rank.encode()]
    if not target:
        job.kill()
        sys.exit(f"no graphrun process of rank {rank} among {workers}")
    if mode == "interrupt":
        os.kill(job.pid, signal.SIGINT)
        print(f"fault: SIGINT to mpirun after {done[-1]}")
    else:
        sig = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}[mode]
        os.kill(target[0], sig)
        print(f"fault: {sig.name} to worker {rank} after {done[-1]}")
    try:
        status = job.wait(timeout=deadline)
        print(f"job: exit status {status} within the deadline")
    except subprocess.TimeoutExpired:
        print(f"job: HUNG, still running {deadline:.0f} s after the fault")
        for p in [job.pid] + descendants(job.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        job.wait()
    time.sleep(0.5)
    left = [p for p in workers if os.path.exists(f"/proc/{p}")
            and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
            != "Z"]
    print("left behind: " + ("no graphrun process" if not left else
                             f"graphrun processes {left}"))
    for p in left:
        os.kill(p, signal.SIGKILL)
    print("--- job output ---")
    log.seek(0)
    sys.stdout.write(log.read().decode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
