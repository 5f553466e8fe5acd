"""Preempts a graphrun job over and over, the way a cluster does, and checks
each stop:

  preempt.py --ckpt DIR --seed S --trials N [--target self|mpirun|rank0|rank1]
             [--signal TERM|USR1] [--expect STATUS] [--moments M,...]
             [--name NAME] -- COMMAND...

Each trial starts COMMAND (graphrun with --checkpoint-dir DIR, or mpirun
around it), waits until the job trains (its chief printed the plan line and
a checkpoint newer than the trial's start is in DIR, or a periodic one is
being written), sends the signal at a moment drawn from the seed, and
checks that

  - the job exits with STATUS (143, graphrun's "preempted") within the
    deadline, and no graphrun process is left;
  - its chief says "stopped after step K", DIR's newest checkpoint is
    ckpt-K and whole (it parses), and no unfinished "*.tmp" is left.

The moments, a trial each in turn from the seeded generator:
  step    a random 0-5 ms after a new checkpoint: mid-step, or during the
          index write that follows the checkpoint's rename;
  save    as soon as a periodic checkpoint's "*.tmp" appears: mid-save;
  double  1-3 ms after a new checkpoint, and a second signal as soon as
          the stop's own checkpoint is being written (none when the job
          was quicker to exit than the poll to see the write; stderr says
          which): the second must change nothing;
  none    50-150 ms after the plan line, for a run without a checkpoint
          directory: only the exit status is checked, and that the run
          said after which step it stopped (when STATUS is 143).

The next trial resumes where the last stopped, so the trials together walk
the run forward; the caller then finishes it and compares the weights with
an uninterrupted run's. Prints one line per trial (no step numbers, which
depend on the machine's speed) and a summary.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from processes import descendants, is_graphrun  # noqa: E402

CHECKPOINT = re.compile(r"ckpt-(\d+)\.safetensors$")
STOPPED = re.compile(rb"stopped after step (\d+)")


def checkpoints(directory):
    try:
        names = os.listdir(directory)
    except OSError:
        return [], []
    steps = sorted(int(m.group(1)) for n in names if (m := CHECKPOINT.match(n)))
    temporary = [n for n in names if n.endswith(".tmp")]
    return steps, temporary


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                    return int(item.split(b"=", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_safetensors_header(path):
    """Whether the file is a whole safetensors file: header and data."""
    import json
    import struct
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    end = max((v["data_offsets"][1] for k, v in header.items()
               if k != "__metadata__"), default=0)
    return len(data) == 8 + length + end


def trial(args, number, moment, rng, command):
    log_path = f"{args.ckpt}.{args.name}{number}.log"
    log = open(log_path, "w+b")
    before, _ = checkpoints(args.ckpt)
    start_step = before[-1] if before else 0
    job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    started = time.monotonic()

    def output():
        log.flush()
        with open(log_path, "rb") as f:
            return f.read()

    def fail(message):
        for p in [job.pid] + descendants(job.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        job.wait()
        sys.stdout.write(output().decode(errors="replace"))
        sys.exit(f"trial {number} ({moment}): {message}")

    # Training: the plan line is out (every worker has its handlers by then)
    # and the run went past the checkpoint it resumed from, or is writing
    # one.
    while True:
        if job.poll() is not None:
            fail(f"the job ended (status {job.returncode}) before the "
                 "signal: make the run longer")
        if time.monotonic() - started > 120:
            fail("no new checkpoint after 120 s")
        steps, temporary = checkpoints(args.ckpt)
        ready = b"(model '" in output()
        if ready and moment == "none":
            time.sleep(rng.uniform(0.05, 0.15))
            break
        # A save too quick to catch: the next checkpoint's rename will do.
        if ready and moment == "save" and (
                temporary or (steps and steps[-1] >= start_step + 80)):
            break
        if ready and moment in ("step", "double") and steps and \
                steps[-1] > start_step:
            # double: past the checkpoint's step, so that the stop writes
            # one of its own.
            time.sleep(rng.uniform(0, 0.005) if moment == "step" else
                       rng.uniform(0.001, 0.003))
            break
        time.sleep(0.0005)

    workers = [p for p in descendants(job.pid) if is_graphrun(p)]
    if args.target == "self":
        target = job.pid
    elif args.target == "mpirun":
        target = job.pid
    else:
        wanted = int(args.target[4:])
        ranks = [p for p in workers if rank_of(p) == wanted]
        if not ranks:
            fail(f"no graphrun process of rank {wanted} among {workers}")
        target = ranks[0]
    sig = getattr(signal, "SIG" + args.signal)
    os.kill(target, sig)
    signalled = time.monotonic()

    second = None
    if moment == "double":
        # The stop's own checkpoint: its temporary file, once it shows.
        # Polled without a pause: the write may take a millisecond.
        seen = False
        until = time.monotonic() + 1.0
        while time.monotonic() < until and job.poll() is None:
            if checkpoints(args.ckpt)[1]:
                seen = True
                break
        second = "after the exit"
        if job.poll() is None:
            try:
                os.kill(target, sig)
                second = "during the save" if seen else "1 s later"
            except OSError:
                pass

    try:
        status = job.wait(timeout=args.deadline)
    except subprocess.TimeoutExpired:
        fail(f"still running {args.deadline:.0f} s after the signal")
    took = time.monotonic() - signalled
    time.sleep(0.2)
    left = [p for p in workers + [job.pid] if alive(p) and p != job.pid]
    if left:
        fail(f"graphrun processes left behind: {left}")
    text = output()
    if status != args.expect:
        fail(f"exit status {status}, not {args.expect}")
    if moment == "none":
        if args.expect == 143 and len(STOPPED.findall(text)) != 1:
            fail("the job did not say once after which step it stopped")
        print(f"trial {number}: SIG{args.signal} to {args.target} (none): "
              f"exit status {status}")
        return took, 0
    stops = STOPPED.findall(text)
    if len(stops) != 1:
        fail("the job did not say once after which step it stopped")
    stop = int(stops[0])
    steps, temporary = checkpoints(args.ckpt)
    if temporary:
        fail(f"unfinished checkpoint files left: {temporary}")
    if not steps or steps[-1] != stop:
        fail(f"stopped after step {stop}, but the newest checkpoint is "
             f"{steps[-1] if steps else 'none'}")
    if stop <= start_step:
        fail(f"stopped after step {stop}, not past {start_step}")
    path = os.path.join(args.ckpt, f"ckpt-{stop}.safetensors")
    if not read_safetensors_header(path):
        fail(f"{path} is not whole")
    print(f"trial {number}: SIG{args.signal} to {args.target} ({moment}): "
          f"exit status {status}, the checkpoint of the step it stopped "
          "after is whole")
    # When the second signal came depends on the machine's speed: for
    # people, on stderr.
    if second:
        print(f"trial {number}: the second signal came {second}",
              file=sys.stderr)
    return took, stop


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--target", default="self")
    parser.add_argument("--signal", default="TERM")
    parser.add_argument("--expect", type=int, default=143)
    parser.add_argument("--deadline", type=float, default=30)
    parser.add_argument("--moments", default="step,save,double")
    parser.add_argument("--name", default="trial",
                        help="the job logs are CKPT.<name><trial>.log")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    rng = random.Random(args.seed)
    if os.path.dirname(args.ckpt):
        os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    moments = args.moments.split(",")
    slowest, stops = 0.0, []
    for number in range(1, args.trials + 1):
        took, stop = trial(args, number, moments[(number - 1) % len(moments)],
                           rng, command)
        slowest = max(slowest, took)
        stops.append(stop)
    # The bound is the test's deadline; the time itself is for people.
    print(f"{args.trials} preemptions, each stopped past the last: the "
          f"slowest exit came {slowest:.2f} s after its signal",
          file=sys.stderr)
    print(f"stopped after steps {stops}", file=sys.stderr)
    print(f"{args.trials} preemptions: all exited {args.expect} with a whole "
          "checkpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
