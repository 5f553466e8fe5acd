"""How long each replica's device sits between two steps, from a trace.

  trace_gaps.py TRACE.json [--skip N]

TRACE is `graphrun --trace`'s Chrome trace. On each replica's timeline a
step's device phases (forward, backward, all-reduce, update) run from the
first phase's start to the last phase's end; the gap is the time from one
step's end to the next one's start: the host waiting for the step, reading
its outputs, running the hooks and launching the next step, plus the input
copy or gather before the forward. Prints, over the steps after the first
N (default 5, the warm-up), the median step period (start to start), the
median device phases and the median gap, and the gap's share of the
period.
"""
import argparse
import json
import statistics
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--skip", type=int, default=5)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    # [replica pid][step] -> (first start, last end) of its device phases.
    spans = {}
    for e in events:
        if e.get("ph") != "X" or not names.get(e["pid"], "").startswith("replica"):
            continue
        step = e["args"]["step"]
        begin, end = e["ts"], e["ts"] + e["dur"]
        steps = spans.setdefault(e["pid"], {})
        b, en = steps.get(step, (begin, end))
        steps[step] = (min(b, begin), max(en, end))
    if not spans:
        sys.exit(f"{args.trace}: no replica timelines (device phases)")
    for pid in sorted(spans):
        steps = spans[pid]
        order = sorted(s for s in steps if s > args.skip)
        pairs = [(a, b) for a, b in zip(order, order[1:]) if b == a + 1]
        if not pairs:
            sys.exit(f"{args.trace}: {names[pid]}: fewer than two steps after "
                     f"the first {args.skip}")
        period = statistics.median(steps[b][0] - steps[a][0] for a, b in pairs)
        busy = statistics.median(steps[a][1] - steps[a][0] for a, _ in pairs)
        gap = statistics.median(steps[b][0] - steps[a][1] for a, b in pairs)
        print(f"{names[pid]}: {len(pairs)} step pairs: period {period:.1f} us, "
              f"device phases {busy:.1f} us, gap {gap:.1f} us "
              f"({100.0 * gap / period:.1f}% of the period)")


if __name__ == "__main__":
    main()
