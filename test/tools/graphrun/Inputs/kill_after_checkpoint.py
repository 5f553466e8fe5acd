"""Runs a command, SIGKILLs it as soon as a checkpoint appears in a
directory, and prints the newest checkpoint the killed run left:

  kill_after_checkpoint.py DIR -- graphrun plan --checkpoint-dir DIR ...
  -> killed after ckpt-50.safetensors

Fails if the command ends by itself first (it was too short to be killed
mid-run) or writes no checkpoint within the time limit.
"""

import os
import re
import signal
import subprocess
import sys
import time

CHECKPOINT = re.compile(r"ckpt-(\d+)\.safetensors$")


def checkpoints(directory):
    if not os.path.isdir(directory):
        return []
    return sorted((int(m.group(1)), name) for name in os.listdir(directory)
                  if (m := CHECKPOINT.match(name)))


def main():
    directory, separator, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    if separator != "--" or not command:
        sys.exit("usage: kill_after_checkpoint.py DIR -- COMMAND...")
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not checkpoints(directory):
        if run.poll() is not None:
            sys.exit(f"the run ended (exit {run.returncode}) before it was "
                     "killed: make it longer")
        if time.monotonic() > deadline:
            run.kill()
            sys.exit(f"no checkpoint in {directory} after 60 s")
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait()
    if run.returncode != -signal.SIGKILL:
        sys.exit(f"the run ended with {run.returncode}, not by the SIGKILL")
    print(f"killed after {checkpoints(directory)[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
