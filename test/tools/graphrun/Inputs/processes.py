"""The processes of a job under test, from /proc: what the fault drivers
(multi-worker/fault.py, preempt.py) look for when they signal a worker and
check that none is left."""

import os


def descendants(root):
    """Every process under `root`."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def is_graphrun(pid):
    """Whether `pid` runs a graphrun binary (not mpirun, not a shell)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0]) == b"graphrun"
    except OSError:
        return False
