#!/usr/bin/env bash
# The host validation of bench/scaling_model.py (docs/scaling.md):
#   * the seed CNN (examples/fashion_mnist_cnn.json), global batch 256, as
#     1 worker (every core), 2 and 4 MPI workers x 1 CPU replica;
#   * the same model alone on one core at the per-worker batch (128, 64);
#   * calibration models for the link (variants of the seed CNN, NOT the
#     seed CNN itself, one all-reduce bucket each) at 2 workers;
# each --steps 40 --warmup 5 --data synthetic --trace, REPS times,
# interleaved; then `scaling_model.py validate` prints the tables.
#
#   bench/scaling-validate.sh [OUT]      (default /tmp/scaling-validate)
#   GRAPH_BIN=DIR   the binaries (default build/bin)
#   REPS=N          repetitions of every run (default 5)
#   STEPS=N WARMUP=N
#
# The host may be shared: each run waits for the CPUs to be idle (IDLE_PCT,
# default 90%, for up to IDLE_WAIT s, default 900) and OUT/env.txt keeps
# the idle share before and after every run next to the raw logs/traces.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GRAPH_BIN:-$root/build/bin}
out=${1:-/tmp/scaling-validate}
reps=${REPS:-5}
steps=${STEPS:-40}
warmup=${WARMUP:-5}
py=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
rm -f "$out/runs.jsonl"
cores=$(nproc)

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $cores cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "git: $(git -C "$root" rev-parse --short HEAD) $(git -C "$root" status --short | tr '\n' ' ')"
  sha256sum "$bin/graphrun" "$bin/graphc" "$bin/graph-import"
  echo "load before: $(cat /proc/loadavg)"
} > "$out/env.txt"

# Plans.
"$bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 \
  -o "$out/seed.mlir"
"$bin/graphc" "$out/seed.mlir" --replicas 1,2,4 -o "$out/seed.plan"
for b in 128 64; do
  "$bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size $b \
    -o "$out/seed_b$b.mlir"
  "$bin/graphc" "$out/seed_b$b.mlir" --replicas 1 -o "$out/seed_b$b.plan"
done
# Calibration variants: conv filters and dense units changed, so the
# gradients range from 5 KiB to 19 MiB; --bucket-bytes 0: one bucket.
calib="tiny:4,8,8:4 d16:32,64,64:16 d1024:32,64,64:1024 d8192:32,64,64:8192"
for spec in $calib; do
  IFS=: read -r name filters units <<<"$spec"
  $py - "$root/examples/fashion_mnist_cnn.json" "$filters" "$units" \
    "$out/cal_$name.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
filters = [int(x) for x in sys.argv[2].split(",")]
convs = [l for l in m["config"]["layers"] if l["class_name"] == "Conv2D"]
for layer, k in zip(convs, filters):
    layer["config"]["filters"] = k
for layer in m["config"]["layers"]:
    if layer["name"] == "dense":
        layer["config"]["units"] = int(sys.argv[3])
json.dump(m, open(sys.argv[4], "w"))
EOF
  "$bin/graph-import" "$out/cal_$name.json" --batch-size 256 -o "$out/cal_$name.mlir"
  "$bin/graphc" "$out/cal_$name.mlir" --replicas 1,2 --bucket-bytes 0 \
    -o "$out/cal_$name.plan"
done

# The share of the CPUs idle over the next second (from /proc/stat).
idle() {
  local a b
  read -r -a a < <(head -1 /proc/stat)
  sleep 1
  read -r -a b < <(head -1 /proc/stat)
  local tot=0 i
  for i in 1 2 3 4 5 6 7 8; do tot=$((tot + b[i] - a[i])); done
  echo $(( 100 * (b[4] - a[4] + b[5] - a[5]) / (tot > 0 ? tot : 1) ))
}
# Waits (IDLE_WAIT seconds at most, default 900) for >= IDLE_PCT% idle
# (default 90): the host may be shared with builds and tests.
wait_idle() {
  local waited=0 now
  while now=$(idle); [ "$now" -lt "${IDLE_PCT:-90}" ] &&
    [ $waited -lt "${IDLE_WAIT:-900}" ]; do
    waited=$((waited + 6))
    sleep 5
  done
  echo "$now"
}

common=(--data synthetic --steps "$steps" --warmup "$warmup" --no-progress
        --log-every 0)
# CPU seconds the whole host spent busy so far (user, nice, system, irq,
# softirq, steal), and this shell's children's (bash's `times`, 2nd line).
host_busy() { awk '/^cpu /{printf "%.2f", ($2+$3+$4+$7+$8+$9)/100}' /proc/stat; }
# Call as `times > "$out/.times"; x=$(own_cpu)`: `times` must run in this
# shell (a subshell's children are not this shell's).
own_cpu() {
  tail -1 "$out/.times" | awk '{
    n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]);
    n += p[1] * 60 + p[2] } printf "%.2f", n }'
}
run() { # name workers plan [env...]
  local name=$1 w=$2 plan=$3
  shift 3
  local base="$out/$name.rep$rep"
  local before; before=$(wait_idle)
  local b0 o0 t0 b1 o1 t1 foreign
  times > "$out/.times"
  b0=$(host_busy); o0=$(own_cpu); t0=$(date +%s.%N)
  if [ "$w" = 1 ]; then
    env "$@" "$bin/graphrun" "$plan" --cpus 1 "${common[@]}" \
      --trace "$base.json" > "$base.log" 2>&1
  else
    env "$@" mpirun -np "$w" --oversubscribe --bind-to none "$bin/graphrun" \
      "$plan" --cpus 1 "${common[@]}" --trace "$base.json" > "$base.log" 2>&1
  fi
  times > "$out/.times"
  b1=$(host_busy); o1=$(own_cpu); t1=$(date +%s.%N)
  # Other processes' share of the host's CPU time while this run ran.
  foreign=$(awk -v b0="$b0" -v b1="$b1" -v o0="$o0" -v o1="$o1" -v t0="$t0" \
    -v t1="$t1" -v c="$cores" 'BEGIN {
      f = ((b1 - b0) - (o1 - o0)) / ((t1 - t0) * c) * 100
      printf "%.1f", f < 0 ? 0 : f }')
  echo "{\"run\": \"$name.rep$rep\", \"idle_before_pct\": $before, \"foreign_cpu_pct\": $foreign}" \
    >> "$out/runs.jsonl"
  echo "$name rep $rep: idle before $before%, other processes $foreign% of the CPUs during the run, $(grep -o 'step time: mean [0-9.]* sec' "$base.log")" \
    | tee -a "$out/env.txt"
}
for rep in $(seq 0 $((reps - 1))); do
  run seed_w1 1 "$out/seed.plan"
  run seed_w2 2 "$out/seed.plan"
  run seed_w4 4 "$out/seed.plan"
  run seed_b128_1core 1 "$out/seed_b128.plan" OMP_NUM_THREADS=1
  run seed_b64_1core 1 "$out/seed_b64.plan" OMP_NUM_THREADS=1
  for spec in $calib; do
    name=${spec%%:*}
    run "cal_$name" 2 "$out/cal_$name.plan"
  done
done
echo "load after: $(cat /proc/loadavg)" >> "$out/env.txt"

cat > "$out/runs.json" <<EOF
{"reps": $reps, "warmup": $warmup, "cores": $cores, "workers": [1, 2, 4],
 "seed_plan": "seed.plan",
 "calibration": [$(for spec in $calib; do n=${spec%%:*}; printf '{"name": "cal_%s", "plan": "cal_%s.plan", "workers": 2},' "$n" "$n"; done | sed 's/,$//')]}
EOF
GRAPHC="$bin/graphc" $py "$root/bench/scaling_model.py" --warmup "$warmup" \
  validate "$out" | tee "$out/validation.md"
