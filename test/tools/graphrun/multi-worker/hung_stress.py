"""The hung-worker case, RUNS times under CPU load: no graphrun may survive.

    hung_stress.py RUNS WORKDIR -- mpirun ... graphrun ... (no --checkpoint-dir)

Keeps one busy loop per core running (a loaded machine is where teardown
races show), and RUNS times starts the job with its own --checkpoint-dir,
SIGSTOPs worker 1 after the first checkpoint (fault.py stop) and requires
the job to end within the deadline and leave no graphrun process behind.
Prints one summary line.
"""

import multiprocessing
import os
import subprocess
import sys


def spin():
    while True:
        pass


def main():
    runs, work = int(sys.argv[1]), sys.argv[2]
    assert sys.argv[3] == "--"
    job = sys.argv[4:]
    fault = os.path.join(os.path.dirname(__file__), "fault.py")
    load = [multiprocessing.Process(target=spin, daemon=True)
            for _ in range(os.cpu_count() or 1)]
    for p in load:
        p.start()
    clean = 0
    try:
        for run in range(runs):
            ckpt = os.path.join(work, f"run{run}")
            r = subprocess.run(
                [sys.executable, fault, "stop", "1", ckpt, "30", "--"] + job +
                ["--checkpoint-dir", ckpt], capture_output=True, text=True)
            ok = ("within the deadline" in r.stdout and
                  "left behind: no graphrun process" in r.stdout)
            if not ok:
                print(f"FAIL: run {run}:\n{r.stdout}{r.stderr}")
                return 1
            clean += 1
    finally:
        for p in load:
            p.terminate()
    print(f"{clean} of {runs} hung-worker jobs ended under load, no graphrun "
          "left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
