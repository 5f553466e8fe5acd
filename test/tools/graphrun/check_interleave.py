"""Checks a host trace (graphrun --trace) for interleaved all-reduces.

  check_interleave.py TRACE BUCKETS

For every replica and step: BUCKETS all-reduce events on the replica's comm
track, and the first of them begins before the replica's last backward
event ends. Prints one line per replica; exits non-zero on a violation.
"""

import json
import sys


def main():
    path, buckets = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    # (replica pid, step) -> {"all-reduce": [(ts, end)], "backward": [...]}
    steps = {}
    for e in events:
        if e["pid"] == 0 or e["name"] not in ("all-reduce", "backward"):
            continue
        key = (e["pid"], e["args"]["step"])
        steps.setdefault(key, {"all-reduce": [], "backward": []})[
            e["name"]].append((e["ts"], e["ts"] + e["dur"]))
    bad = 0
    for pid in sorted({p for p, _ in steps}):
        mine = sorted(s for p, s in steps if p == pid)
        for step in mine:
            s = steps[(pid, step)]
            reduces = sorted(s["all-reduce"])
            if len(reduces) != buckets:
                print(f"replica {pid - 1}, step {step}: {len(reduces)} "
                      f"all-reduces, expected {buckets}")
                bad += 1
                continue
            backward_end = max(end for _, end in s["backward"])
            if reduces[0][0] >= backward_end:
                print(f"replica {pid - 1}, step {step}: the first all-reduce "
                      f"begins at {reduces[0][0]:.1f} us, after backward "
                      f"ends at {backward_end:.1f} us")
                bad += 1
        if not bad:
            print(f"replica {pid - 1}: {len(mine)} steps, {buckets} "
                  "all-reduces a step, each step's first before its "
                  "backward ends")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
