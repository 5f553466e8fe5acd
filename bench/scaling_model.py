#!/usr/bin/python3
"""Predicts data-parallel step time and scaling efficiency from one measured
graphrun trace and the plan's all-reduce buckets.

Inputs
  * a `graphrun --trace` file (Chrome trace events, see
    runtime/core/TraceHook.cpp): per step, per replica, the forward,
    backward, all-reduce and update phases, and the host's step and input
    wait. Each phase's mean over the steps after --warmup is taken; with
    several replicas in the file, the mean over replicas.
  * the plan's gradient buckets, in backward order (bucket #0 is filled
    first). They are read from `graphc --inspect PLAN` (the first train
    program that has buckets: every train_xN of a plan has the same ones;
    --inspect rounds sizes to 0.1 KiB / 0.01 MiB, under 0.1% here), or
    given by hand with --buckets.

Cost model (every constant is a flag; GB = 1e9 bytes):
  ring all-reduce of S bytes over P devices on one kind of link:
      t = alpha * 2(P-1) + 2(P-1)/P * S / B
  hierarchical, nodes of g devices (N = P/g nodes, P > g):
      reduce-scatter in the node   (g-1) a_i + (g-1)/g * S / B_i
      ring across nodes on S/g     2(N-1) a_e + 2(N-1)/N * (S/g) / (B_e * rails/g)
      all-gather in the node       (g-1) a_i + (g-1)/g * S / B_i
    (rails = NICs a node uses at once; with rails = g every local rank
    runs its own cross-node ring on its own NIC, as on a DGX H100.)
  P <= g: one ring over the node's link.
  --topology flat: one ring over all P devices, every hop at the
  cross-node link (alpha_e, B_e) once P > g.
  --inter-algo tree (not the default; for comparison only): the cross-node
  step as a binary tree, 2*ceil(log2 N) a_e + 2 (S/g) / (B_e * rails/g).

Schedule
  overlap (GPU backends): bucket k is ready when backward has produced it;
    without per-bucket trace events (graphrun has none today) the ready
    times spread the buckets over the backward phase in backward order,
    in proportion to their bytes. The comm stream reduces one bucket at a
    time: start_k = max(ready_k, end_{k-1}). The step is
      host + forward + max(backward, end of last reduction) + update.
  serial (CPU host backends: graphrun's host path runs the all-reduce on
    the replica's own thread, after backward, no overlap):
      host + forward + backward + sum of reductions + update.
  host = input wait + other (step minus the device phases), from the trace;
  for GPU predictions it is --host-overhead-ms (default 0: the input of
  step k+1 is staged while step k runs).

Scaling
  weak: the per-device batch is held; efficiency = T(1) / T(P).
  strong: the global batch G is held; per-device forward and backward
    scale linearly with the per-device batch G/P (update does not: it is
    per parameter); efficiency = T_1(G) / (P * T(P)).

Subcommands
  predict   the table for --devices (default 8,64,256,1024)
  fit-link  alpha and bandwidth from multi-worker runs' traces
  validate  the host validation of bench/scaling-validate.sh

Python 3 and numpy only.
"""

import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
GB = 1e9
US = 1e-6
MS = 1e-3


# --------------------------------------------------------------------------
# Inputs


def parse_size(text):
    m = re.fullmatch(r"\s*([0-9.]+)\s*(B|KiB|MiB|GiB)?\s*", text)
    if not m:
        raise ValueError("not a size: %r (e.g. 364.5KiB, 2.51MiB, 256B)" % text)
    return float(m.group(1)) * UNITS[m.group(2) or "B"]


def parse_inspect(text, program=None):
    """(bucket bytes in backward order, global batch, program name) from
    `graphc --inspect` output. The first train program with buckets, or
    `program`."""
    batch = None
    m = re.search(r"global batch (\d+)", text)
    if m:
        batch = int(m.group(1))
    current = None
    for line in text.splitlines():
        p = re.match(r"program (\S+) \(train", line)
        if p:
            current = p.group(1)
            continue
        b = re.match(r"\s+buckets: (.*)", line)
        if b and current and (program is None or current == program):
            if b.group(1).strip() == "none":
                if program is not None:
                    return [], batch, current
                continue
            sizes = re.findall(r"#\d+ ([0-9.]+ (?:B|KiB|MiB|GiB))", b.group(1))
            return [parse_size(s) for s in sizes], batch, current
    return [], batch, program


def plan_buckets(plan, graphc, program=None):
    out = subprocess.run([graphc, "--inspect", plan], check=True,
                         capture_output=True, text=True).stdout
    return parse_inspect(out, program)


def rank_files(path):
    """The trace and the other workers' (.rank<r> before the extension)."""
    stem, ext = os.path.splitext(path)
    others = glob.glob(glob.escape(stem) + ".rank*" + ext)
    key = lambda p: int(re.search(r"\.rank(\d+)" + re.escape(ext) + "$", p).group(1))
    return [path] + sorted(others, key=key)


def read_trace(path, warmup):
    """Per step (after warm-up): the host's step and input durations and the
    mean over replicas of each device phase, in seconds."""
    with open(path) as f:
        doc = json.load(f)
    steps = {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        step = e["args"]["step"]
        if step <= warmup:
            continue
        s = steps.setdefault(step, {"replicas": {}})
        dur = e["dur"] * US
        if e["pid"] == 0:
            s[e["name"]] = s.get(e["name"], 0.0) + dur
        else:
            r = s["replicas"].setdefault(e["pid"], {})
            r[e["name"]] = r.get(e["name"], 0.0) + dur
    other = doc.get("otherData", {})
    return steps, other


PHASES = ("forward", "backward", "all-reduce", "update")


def summarize(path, warmup):
    """Mean phase times (s) of one trace, and the per-step all-reduce."""
    steps, other = read_trace(path, warmup)
    if not steps:
        sys.exit("%s: no steps after the %d warm-up steps" % (path, warmup))
    rows = []
    for step in sorted(steps):
        s = steps[step]
        reps = list(s["replicas"].values())
        row = {"step": step, "step_s": s.get("step", 0.0),
               "input": s.get("input", 0.0)}
        for ph in PHASES:
            row[ph] = float(np.mean([r.get(ph, 0.0) for r in reps])) if reps else 0.0
        row["other"] = row["step_s"] - row["input"] - sum(row[ph] for ph in PHASES)
        rows.append(row)
    mean = {k: float(np.mean([r[k] for r in rows]))
            for k in ("step_s", "input", "other") + PHASES}
    program = other.get("program", "")
    m = re.match(r"train_x(\d+)", program)
    mean["program_replicas"] = int(m.group(1)) if m else other.get("replicas", 1)
    mean["program"] = program
    mean["steps"] = len(rows)
    mean["rows"] = rows
    return mean


# --------------------------------------------------------------------------
# Cost model


class Link:
    def __init__(self, a):
        self.gpn = a.gpus_per_node
        self.ai = a.intra_alpha_us * US
        self.bi = a.intra_bw * GB
        self.ae = a.inter_alpha_us * US
        self.be = a.inter_bw * GB
        self.rails = a.rails
        self.topology = a.topology
        self.inter_algo = a.inter_algo

    @staticmethod
    def ring(p, size, alpha, bw):
        if p <= 1:
            return 0.0
        return alpha * 2 * (p - 1) + 2.0 * (p - 1) / p * size / bw

    def allreduce(self, p, size):
        g = self.gpn
        if p <= 1:
            return 0.0
        if p <= g:
            return self.ring(p, size, self.ai, self.bi)
        if self.topology == "flat":
            return self.ring(p, size, self.ae, self.be)
        n = math.ceil(p / g)
        shard = size / g
        rs = (g - 1) * self.ai + (g - 1) / g * size / self.bi
        rail_bw = self.be * min(self.rails, g) / g
        if self.inter_algo == "tree":
            inter = 2 * math.ceil(math.log2(n)) * self.ae + 2 * shard / rail_bw
        else:
            inter = self.ring(n, shard, self.ae, rail_bw)
        return 2 * rs + inter


def schedule(buckets, p, link, fwd, bwd, upd, host, overlap):
    """Predicted step time (s) and the communication time (s) that is not
    hidden behind backward."""
    costs = [link.allreduce(p, b) for b in buckets]
    if not overlap or not buckets:
        comm = sum(costs)
        return host + fwd + bwd + comm + upd, comm, comm
    total = float(sum(buckets))
    ready = np.cumsum(buckets) / total * bwd
    end = 0.0
    for r, c in zip(ready, costs):
        end = max(r, end) + c
    exposed = max(0.0, end - bwd)
    return host + fwd + max(bwd, end) + upd, sum(costs), exposed


def device_times(tr, a, batch_scale=1.0, p=1):
    """forward, backward, update, host (s) per device at P devices."""
    fwd, bwd, upd = tr["forward"], tr["backward"], tr["update"]
    host = tr["input"] + tr["other"]
    if a.compute_ms is not None:
        # A device whose whole step's compute is given: the trace's phases
        # keep their shares of it.
        total = fwd + bwd + upd
        k = a.compute_ms * MS / total
        fwd, bwd, upd = fwd * k, bwd * k, upd * k
        host = a.host_overhead_ms * MS
    if a.shared_host_cores:
        # P workers share one host's cores (time-slicing when P > cores):
        # each worker's compute slows by trace cores / (cores / P).
        slow = a.trace_cores / (a.shared_host_cores / p)
        fwd, bwd, upd = fwd * slow, bwd * slow, upd * slow
    return fwd * batch_scale, bwd * batch_scale, upd, host


def predict_rows(tr, buckets, a, devices, scaling):
    link = Link(a)
    overlap = a.overlap == "on"
    b0 = a.per_device_batch
    rows = []
    scale1 = 1.0 if scaling == "weak" else a.strong_global_batch / b0
    f1, bw1, u1, h1 = device_times(tr, a, scale1, 1)
    t1 = h1 + f1 + bw1 + u1
    for p in devices:
        if scaling == "weak":
            f, b, u, h = device_times(tr, a, 1.0, p)
            t, comm, exposed = schedule(buckets, p, link, f, b, u, h, overlap)
            eff = t1 / t
            per_dev = b0
            gbatch = b0 * p
        else:
            g = a.strong_global_batch
            if g % p:
                continue
            per_dev = g // p
            f, b, u, h = device_times(tr, a, per_dev / b0, p)
            t, comm, exposed = schedule(buckets, p, link, f, b, u, h, overlap)
            eff = t1 / (p * t)
            gbatch = g
        rows.append({"P": p, "per_device_batch": per_dev, "global_batch": gbatch,
                     "compute_ms": (f + b + u) * 1e3, "allreduce_ms": comm * 1e3,
                     "exposed_ms": exposed * 1e3, "step_ms": t * 1e3,
                     "efficiency": eff, "images_per_s": gbatch / t})
    return t1, rows


def table(rows, scaling):
    out = ["| P | per-device batch | global batch | compute ms | all-reduce ms "
           "(sum) | exposed ms | step ms | %s efficiency | images/s |"
           % scaling,
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append("| %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %.1f%% | %.0f |" % (
            r["P"], r["per_device_batch"], r["global_batch"], r["compute_ms"],
            r["allreduce_ms"], r["exposed_ms"], r["step_ms"],
            100 * r["efficiency"], r["images_per_s"]))
    return "\n".join(out)


# --------------------------------------------------------------------------
# Flags


def add_model_flags(ap):
    g = ap.add_argument_group("cost model (GB = 1e9 bytes)")
    g.add_argument("--gpus-per-node", type=int, default=8)
    g.add_argument("--intra-bw", type=float, default=370.0,
                   help="in-node (NVLink) bandwidth per device, GB/s (370)")
    g.add_argument("--intra-alpha-us", type=float, default=3.0,
                   help="in-node latency per ring step, us (3)")
    g.add_argument("--inter-bw", type=float, default=50.0,
                   help="cross-node bandwidth per NIC, GB/s (50: 400 Gb/s)")
    g.add_argument("--inter-alpha-us", type=float, default=15.0,
                   help="cross-node latency per ring step, us (15)")
    g.add_argument("--rails", type=int, default=8,
                   help="NICs per node used at once (8: one per GPU)")
    g.add_argument("--topology", choices=("hier", "flat"), default="hier")
    g.add_argument("--inter-algo", choices=("ring", "tree"), default="ring")
    g.add_argument("--overlap", choices=("on", "off"), default="on",
                   help="on: GPU backends (buckets overlap backward); off: "
                        "graphrun's CPU host path (all-reduce after backward)")
    c = ap.add_argument_group("compute")
    c.add_argument("--compute-ms", type=float, default=None,
                   help="per-device compute per step (forward+backward+update) "
                        "in ms, e.g. an assumed GPU time; the trace's phase "
                        "shares split it. Default: the trace's own times")
    c.add_argument("--host-overhead-ms", type=float, default=0.0,
                   help="with --compute-ms: host time per step outside the "
                        "device phases (default 0)")
    c.add_argument("--per-device-batch", type=int, default=None,
                   help="default: the plan's global batch / the trace "
                        "program's replicas")
    c.add_argument("--shared-host-cores", type=float, default=0,
                   help="the P workers share one host of this many cores "
                        "(the host validation); 0: each device is its own")
    c.add_argument("--trace-cores", type=float, default=1,
                   help="cores the traced worker used (with --shared-host-cores)")


def load_inputs(a):
    tr = summarize(a.trace, a.warmup)
    buckets, gbatch, program = [], None, None
    if a.buckets is not None:
        buckets = [parse_size(s) for s in a.buckets.split(",") if s.strip()]
    elif a.plan:
        buckets, gbatch, program = plan_buckets(a.plan, a.graphc, a.program)
    else:
        sys.exit("give --plan (read with graphc --inspect) or --buckets")
    if a.per_device_batch is None:
        if gbatch is None:
            sys.exit("--per-device-batch: the plan did not say its global batch")
        a.per_device_batch = gbatch // tr["program_replicas"]
    return tr, buckets


def cmd_predict(a):
    tr, buckets = load_inputs(a)
    devices = [int(x) for x in a.devices.split(",")]
    result = {"trace": a.trace, "buckets_bytes": buckets,
              "trace_means_ms": {k: tr[k] * 1e3 for k in
                                 ("step_s", "input", "other") + PHASES},
              "flags": {k: v for k, v in vars(a).items() if k != "func"}}
    print("trace %s: %d steps after %d warm-up; means (ms): forward %.3f, "
          "backward %.3f, all-reduce %.3f, update %.3f, input %.3f, other %.3f"
          % (a.trace, tr["steps"], a.warmup, tr["forward"] * 1e3,
             tr["backward"] * 1e3, tr["all-reduce"] * 1e3, tr["update"] * 1e3,
             tr["input"] * 1e3, tr["other"] * 1e3))
    print("buckets (backward order): %s = %.1f KiB" % (
        ", ".join("%.1f KiB" % (b / 1024) for b in buckets), sum(buckets) / 1024))
    if a.compute_ms is not None:
        print("compute per device per step: %.3f ms GIVEN (--compute-ms), "
              "not measured; split as the trace's phases" % a.compute_ms)
    link = Link(a)
    print("link: %d per node; in-node %.0f GB/s, %.1f us; cross-node %.0f GB/s "
          "x %d rails, %.1f us; %s, cross-node %s; overlap %s"
          % (link.gpn, a.intra_bw, a.intra_alpha_us, a.inter_bw, a.rails,
             a.inter_alpha_us, a.topology, a.inter_algo, a.overlap))
    for scaling in (["weak", "strong"] if a.scaling == "both" else [a.scaling]):
        t1, rows = predict_rows(tr, buckets, a, devices, scaling)
        head = ("weak scaling: %d per device" % a.per_device_batch
                if scaling == "weak" else
                "strong scaling: global batch %d" % a.strong_global_batch)
        print("\n%s; single-device step %.3f ms%s\n" % (
            head, t1 * 1e3, "" if scaling == "weak" else
            " (its compute scaled linearly to batch %d)" % a.strong_global_batch))
        print(table(rows, scaling))
        result[scaling] = {"single_device_step_ms": t1 * 1e3, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


# --------------------------------------------------------------------------
# Link fit and host validation


def per_step_min_allreduce(trace, warmup):
    """Per step, the smallest all-reduce phase over the workers' traces: the
    last worker to arrive waits for no one, so its all-reduce is the
    transfer (and the local copies) without the others' skew."""
    per = {}
    for path in rank_files(trace):
        for r in summarize(path, warmup)["rows"]:
            per.setdefault(r["step"], []).append(r["all-reduce"])
    n = len(rank_files(trace))
    return [min(v) for k, v in sorted(per.items()) if len(v) == n], n


def fit_link(points):
    """alpha (s), bandwidth (B/s) of t = n*2(P-1)*alpha + 2(P-1)/P*S/B, least
    squares in relative error. points: (P, buckets, bytes, t)."""
    A = np.array([[n * 2 * (p - 1), 2.0 * (p - 1) / p * s] for p, n, s, t in points])
    t = np.array([pt[3] for pt in points])
    w = 1.0 / t
    x, *_ = np.linalg.lstsq(A * w[:, None], t * w, rcond=None)
    alpha, inv_bw = x
    return float(alpha), float(1.0 / inv_bw) if inv_bw > 0 else float("inf")


def read_step_timer(log):
    """Mean step (s) and the across-workers mean (s) from graphrun's output."""
    text = open(log).read()
    m = re.search(r"step time: mean ([0-9.]+) sec", text)
    x = re.search(r"across workers ([0-9.]+) sec", text)
    return (float(m.group(1)) if m else None, float(x.group(1)) if x else 0.0)


def cmd_fit_link(a):
    pts = []
    for spec in a.run:
        trace, plan = spec.split(":", 1)
        buckets, _, _ = plan_buckets(plan, a.graphc)
        mins, n = per_step_min_allreduce(trace, a.warmup)
        t = float(np.median(mins))
        pts.append((n, len(buckets), sum(buckets), t))
        print("%s: %d workers, %d bucket(s) %.1f KiB, all-reduce (min over "
              "workers) median %.3f ms" % (trace, n, len(buckets),
                                          sum(buckets) / 1024, t * 1e3))
    alpha, bw = fit_link(pts)
    print("fit: alpha %.1f us, bandwidth %.3f GB/s" % (alpha / US, bw / GB))


def cmd_validate(a):
    """The host validation: fit the link on the calibration runs, predict the
    seed CNN's 2- and 4-worker step from single-worker runs, compare."""
    d = a.dir
    meta = json.load(open(os.path.join(d, "runs.json")))
    reps = meta["reps"]
    warm = meta["warmup"]
    cores = meta["cores"]

    # Runs during which other processes used more than --max-foreign per
    # cent of the host's CPU time are left out (and listed).
    foreign = {}
    jl = os.path.join(d, "runs.jsonl")
    if os.path.exists(jl):
        for line in open(jl):
            if line.strip():
                r = json.loads(line)
                foreign[r["run"]] = r["foreign_cpu_pct"]
    left_out = []

    def runs(name):
        out = []
        for r in range(reps):
            run = "%s.rep%d" % (name, r)
            base = os.path.join(d, run)
            if not os.path.exists(base + ".json"):
                continue
            if foreign.get(run, 0.0) > a.max_foreign:
                if run not in [x[0] for x in left_out]:
                    left_out.append((run, foreign[run],
                                     read_step_timer(base + ".log")[0]))
                continue
            out.append(base)
        return out

    # 1. Link: calibration models (not the seed CNN) at 2 workers.
    pts, cal_rows = [], []
    for c in meta["calibration"]:
        buckets, _, _ = plan_buckets(os.path.join(d, c["plan"]), a.graphc)
        ts, tw = [], []
        for base in runs(c["name"]):
            mins, n = per_step_min_allreduce(base + ".json", warm)
            ts.append(float(np.median(mins)))
            tw.append(summarize(base + ".json", warm)["all-reduce"])
        t = float(np.median(ts))
        pts.append((c["workers"], len(buckets), sum(buckets), t))
        cal_rows.append((c["name"], c["workers"], sum(buckets), t, float(np.median(tw))))
    alpha, bw = fit_link(pts)
    # The same fit on rank 0's mean all-reduce phase (its wait for the
    # slower worker included).
    alpha_x, bw_x = fit_link([(p, n, s, x) for (p, n, s, _), (_, _, _, _, x)
                              in zip(pts, cal_rows)])
    link_args = argparse.Namespace(
        gpus_per_node=10 ** 9, intra_alpha_us=alpha / US, intra_bw=bw / GB,
        inter_alpha_us=alpha / US, inter_bw=bw / GB, rails=1,
        topology="flat", inter_algo="ring")
    link = Link(link_args)

    print("## Link fit (calibration models, %d workers, one bucket each)\n" %
          meta["calibration"][0]["workers"])
    print("| model | workers | bucket | all-reduce, min over workers, median "
          "(ms) | fitted (ms) | rank 0's all-reduce phase, mean (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (name, p, s, t, x) in cal_rows:
        print("| %s | %d | %.1f KiB | %.3f | %.3f | %.3f |" % (
            name, p, s / 1024, t * 1e3, link.allreduce(p, s) * 1e3, x * 1e3))
    print("\nfit (min over workers): alpha %.1f us, bandwidth %.3f GB/s" %
          (alpha / US, bw / GB))
    print("fit (rank 0's all-reduce phase, skew included): alpha %.1f us, "
          "bandwidth %.3f GB/s\n" % (alpha_x / US, bw_x / GB))

    # 2. Measured seed CNN runs.
    seed_buckets, gbatch, _ = plan_buckets(os.path.join(d, meta["seed_plan"]),
                                           a.graphc)

    def measured(name):
        steps = [read_step_timer(b + ".log")[0] for b in runs(name)]
        steps = [s for s in steps if s]
        return steps

    def trace_means(name):
        ms = [summarize(b + ".json", warm) for b in runs(name)]
        return {k: float(np.mean([m[k] for m in ms])) for k in
                ("step_s", "input", "other") + PHASES}

    base = argparse.Namespace(compute_ms=None, host_overhead_ms=0.0,
                              shared_host_cores=cores, trace_cores=cores)
    one = trace_means("seed_w1")
    rows = []
    for w in meta["workers"]:
        meas = measured("seed_w%d" % w)
        if not meas:
            continue
        m = float(np.mean(meas))
        # (a) from the 1-worker run (batch %d, every core): strong scaling,
        # compute x (1/W) for the batch, x cores/(cores/W) for the cores.
        args = argparse.Namespace(**vars(base))
        f, b, u, h = device_times(one, args, 1.0 / w, w)
        pa, comm, _ = schedule(seed_buckets, w, link, f, b, u, h, False)
        # (b) from a 1-worker run at the per-worker batch on one core:
        # weak scaling from it, x 1/(cores/W) when W workers time-slice
        # the cores (W > cores).
        ref = "seed_b%d_1core" % (gbatch // w)
        pb = None
        if runs(ref):
            rb = trace_means(ref)
            args = argparse.Namespace(**vars(base))
            args.trace_cores = 1
            f, b, u, h = device_times(rb, args, 1.0, w)
            pb, _, _ = schedule(seed_buckets, w, link, f, b, u, h, False)
        # (c) the all-reduce model alone: the measured step with rank 0's
        # measured all-reduce phase (its wait for the slower workers
        # included) replaced by the model's.
        own = trace_means("seed_w%d" % w)
        pc = m - own["all-reduce"] + comm
        rows.append((w, meas, m, pa, pb, pc, comm, own))
    print("## Seed CNN, global batch %d: measured vs predicted (no overlap)\n"
          % gbatch)
    print("| workers | measured step, mean of runs (ms) | runs (ms) | (a) from "
          "1-worker run | error | (b) from 1-core run at per-worker batch | "
          "error | (c) own compute + modelled all-reduce | error |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for (w, meas, m, pa, pb, pc, comm, own) in rows:
        err = lambda p: "%+.1f%%" % (100 * (p - m) / m) if p else "-"
        fmt = lambda p: "%.2f" % (p * 1e3) if p else "-"
        print("| %d | %.2f | %s | %s | %s | %s | %s | %s | %s |" % (
            w, m * 1e3, ", ".join("%.2f" % (x * 1e3) for x in meas),
            fmt(pa), err(pa), fmt(pb), err(pb), fmt(pc), err(pc)))
    if left_out:
        print("\nleft out (other processes used more than %.0f%% of the CPUs "
              "during the run): %s" % (a.max_foreign, ", ".join(
                  "%s (%.1f%%, step %.2f ms)" % (r, f, (t or 0) * 1e3)
                  for r, f, t in left_out)))
    print("\nmodelled all-reduce per step: " + ", ".join(
        "%d workers %.3f ms" % (w, comm * 1e3) for (w, _, _, _, _, _, comm, _) in rows))
    print("measured (ms): the step timer's mean step of each run; the phases "
          "from rank 0's trace, mean of the runs:")
    def show(label, own, meas):
        print("  %s: step %s; forward %.2f, backward %.2f, all-reduce %.2f, "
              "update %.2f, input %.2f, other %.2f" % (
                  label, ", ".join("%.2f" % (x * 1e3) for x in meas),
                  own["forward"] * 1e3, own["backward"] * 1e3,
                  own["all-reduce"] * 1e3, own["update"] * 1e3,
                  own["input"] * 1e3, own["other"] * 1e3))
    for (w, meas, _, _, _, _, _, own) in rows:
        show("%d worker(s), batch %d each" % (w, gbatch // w), own, meas)
    for w in meta["workers"]:
        ref = "seed_b%d_1core" % (gbatch // w)
        if runs(ref):
            show("1 worker on 1 core, batch %d" % (gbatch // w),
                 trace_means(ref), measured(ref))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphc", default=os.environ.get(
        "GRAPHC", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "..", "build", "bin", "graphc")))
    ap.add_argument("--warmup", type=int, default=5,
                    help="steps left out of the means (as graphrun --warmup)")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("predict", help="step time and efficiency at P devices")
    p.add_argument("--trace", required=True)
    p.add_argument("--plan")
    p.add_argument("--program", help="train program whose buckets to read")
    p.add_argument("--buckets", help="bucket sizes in backward order, e.g. "
                                     "2.8KiB,144KiB (instead of --plan)")
    p.add_argument("--devices", default="8,64,256,1024")
    p.add_argument("--scaling", choices=("weak", "strong", "both"), default="weak")
    p.add_argument("--strong-global-batch", type=int, default=16384)
    p.add_argument("--json", help="also write the numbers here")
    add_model_flags(p)
    p.set_defaults(func=cmd_predict)

    f = sub.add_parser("fit-link", help="alpha and bandwidth from runs")
    f.add_argument("run", nargs="+", help="TRACE:PLAN of a multi-worker run "
                                          "(its .rank<r> traces beside it)")
    f.set_defaults(func=cmd_fit_link)

    v = sub.add_parser("validate", help="bench/scaling-validate.sh's tables")
    v.add_argument("dir")
    v.add_argument("--max-foreign", type=float, default=5.0,
                   help="leave out runs during which other processes used "
                        "more than this %% of the host's CPU time (5)")
    v.set_defaults(func=cmd_validate)

    a = ap.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
