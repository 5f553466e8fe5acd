"""Which threads of a running graphrun take its preemption signals: one
thread, graph-signals; every other blocks them. oneDNN 2.6's JIT GEMM
kernels point rsp into a heap workspace while they run, and a signal frame
written on such a thread corrupts the heap (runtime/job/Preemption.h).

  signal_threads.py --signals TERM,INT -- COMMAND...

Starts COMMAND, waits until it trains (the plan line) and 0.5 s more, so
that every device thread and OpenMP team is up, reads each thread's name
and blocked-signal mask from /proc, says who takes the signals, then sends
SIGTERM and checks that the job stops as preempted (status 143).
"""

import argparse
import os
import signal
import subprocess
import sys
import time


def threads(pid):
    """(name, blocked-signal mask) of each thread of `pid`."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # a thread that ended meanwhile
        out.append((name, int(fields["SigBlk"].strip(), 16)))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--signals", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    numbers = [getattr(signal, "SIG" + s) for s in args.signals.split(",")]
    bits = 0
    for n in numbers:
        bits |= 1 << (n - 1)

    job = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    os.set_blocking(job.stdout.fileno(), False)
    seen, started = b"", time.monotonic()
    while b"(model '" not in seen:
        if job.poll() is not None or time.monotonic() - started > 120:
            job.kill()
            sys.exit("the job ended or never trained:\n" +
                     seen.decode(errors="replace"))
        seen += job.stdout.read() or b""
        time.sleep(0.01)
    time.sleep(0.5)

    found = threads(job.pid)
    takers = [name for name, blocked in found if blocked & bits == 0]
    others = [(name, blocked) for name, blocked in found
              if blocked & bits != 0]
    partly = [name for name, blocked in others if blocked & bits != bits]
    print("take the signals: " + ", ".join(sorted(takers)))
    print(f"block them: {len(others)} threads" +
          (f" (only some of them: {', '.join(partly)})" if partly else ""))

    job.send_signal(signal.SIGTERM)
    out, _ = job.communicate(timeout=120)
    seen += out or b""
    print(f"exit status {job.returncode}")
    if job.returncode != 143:
        sys.stdout.write(seen.decode(errors="replace"))


if __name__ == "__main__":
    main()
