"""Each kernel's device time in one training step, from two ncu runs.

  ncu_step_table.py SHORT.csv LONG.csv STEPS

SHORT and LONG are `ncu --csv --print-summary per-kernel --metrics
gpu__time_duration.sum` of the same graphrun command with N and N + STEPS
steps. Start-up launches (cudnnFind, the fused-call probes, variable
initialisation) are the same in both, so LONG - SHORT is STEPS steps'
kernels exactly, whatever start-up launched: per kernel and launch shape,
the difference of invocations x average, over STEPS. Prints a table,
largest first, and the step's sum. ncu serialises kernels and flushes the
caches before each one, so the sum is an upper bound on the step.
"""
import csv
import sys


def totals(path):
    """(kernel, grid, block) -> (invocations, total ns)."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 15 or not row[0].isdigit():
                continue
            if row[10] != "gpu__time_duration.sum":
                continue
            name = row[3].split("(")[0].replace("void ", "")
            key = (name, row[5], row[4])
            calls = int(row[8])
            average = float(row[14].replace(",", ""))
            n, t = out.get(key, (0, 0.0))
            out[key] = (n + calls, t + calls * average)
    return out


def main():
    short, long_, steps = totals(sys.argv[1]), totals(sys.argv[2]), int(sys.argv[3])
    rows = []
    for key, (n, t) in long_.items():
        n0, t0 = short.get(key, (0, 0.0))
        if n > n0:
            rows.append(((t - t0) / steps / 1000.0, (n - n0) / steps, key))
    rows.sort(reverse=True)
    print(f"{'us/step':>8} {'calls':>5}  kernel [grid]")
    for us, calls, (name, grid, _) in rows:
        print(f"{us:8.1f} {calls:5.1f}  {name[:90]} {grid}")
    print(f"{sum(r[0] for r in rows):8.1f}        the step (kernels only, serialised)")


if __name__ == "__main__":
    main()
