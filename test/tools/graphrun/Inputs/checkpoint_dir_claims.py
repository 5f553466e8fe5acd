"""Two runs on one --checkpoint-dir, and a directory no file can be written
in: each refused before the first step.

  checkpoint_dir_claims.py GRAPHRUN PLAN WORK

busy:     run A trains on WORK/busy (a long synthetic run); once its
          WORK/busy/.lock names A's pid, run B on the same directory must
          fail at once, naming that pid, while A keeps training (then A is
          killed: lit may start it with SIGINT ignored).
readonly: WORK/frozen made immutable (chattr +i; root ignores the mode
          bits), or, where chattr cannot, a directory under /proc/sys:
          the run must fail before its first step, saying it cannot write.
"""

import os
import subprocess
import sys
import time

graphrun, plan, work = sys.argv[1:4]
common = [graphrun, plan, "--backend", "reference", "--data", "synthetic",
          "--no-progress", "--log-every", "0"]

busy = os.path.join(work, "busy")
a = subprocess.Popen(common + ["--steps", "1000000", "--checkpoint-dir", busy],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    lock = os.path.join(busy, ".lock")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.exists(lock) and open(lock).read().strip() == str(a.pid):
            break
        time.sleep(0.05)
    else:
        a.kill()
        sys.exit("run A never locked its checkpoint directory")
    b = subprocess.run(common + ["--steps", "5", "--checkpoint-dir", busy],
                       capture_output=True, text=True, timeout=60)
    print(f"busy: B exit {b.returncode}")
    print(b.stderr.strip().replace(str(a.pid), "<A>"))
    if b.stdout.count("step ") > 0:
        print("busy: B trained")
    print(f"busy: A still running: {a.poll() is None}")
finally:
    # Never left running, whatever failed above.
    a.kill()
    a.wait(timeout=60)

frozen = os.path.join(work, "frozen")
os.makedirs(frozen, exist_ok=True)
immutable = subprocess.run(["chattr", "+i", frozen],
                           capture_output=True).returncode == 0
target = frozen if immutable else "/proc/sys/graphrun-checkpoints"
try:
    r = subprocess.run(common + ["--steps", "5", "--checkpoint-dir", target],
                       capture_output=True, text=True, timeout=60)
finally:
    if immutable:
        subprocess.run(["chattr", "-i", frozen])
print(f"readonly: exit {r.returncode}, trained: {'step ' in r.stdout}")
print(r.stderr.strip().replace(target, "<DIR>"))
