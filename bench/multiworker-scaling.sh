#!/usr/bin/env bash
# Multi-worker scaling on this host, ours against PyTorch DDP, in one run:
# the seed Fashion-MNIST CNN, global batch 256, Adam 0.001, synthetic data.
#
#   ours 1 worker x 1 thread       graphrun --cpus 1, OMP_NUM_THREADS=1
#   ours 2 workers x 1 thread      mpirun -np 2 graphrun --cpus 1 (each 128)
#   ours 1 worker x 2 replicas     graphrun --cpus 2, one thread a replica
#   DDP 1 and 2 workers x 1 thread bench/pytorch_ddp_fashion.py (gloo)
#
# Every configuration runs REPS times, interleaved, and the median images/s
# is reported; efficiency = (2-worker images/s) / (2 x 1-worker images/s).
# Then bench/mpi-allreduce times our cross-worker all-reduce against a bare
# MPI_Allreduce of the seed CNN's gradients on the same two processes.
#
#   bench/multiworker-scaling.sh [steps] [build-dir]
#   REPS=N (default 3)   WARMUP=N (default 5)   IDLE_WAIT=seconds (600)
#
# Each run first waits (up to IDLE_WAIT) for the CPUs to be 90% idle and
# says so when they were not: a shared machine makes the figures worthless.
# Goals (issue 12): efficiency >= 0.9, ours >= 2x DDP's 2-worker images/s,
# all-reduce overhead <= 10%.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-60}"
build="${2:-$root/build}"
reps="${REPS:-3}"
warmup="${WARMUP:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The fair-baseline allocator settings (shared/BUILD-NOTES.md), for both.
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
mpirun=(mpirun --oversubscribe --bind-to none)

"$root/bench/pytorch-peer.sh"
command -v mpirun >/dev/null || {
  echo "multiworker-scaling: mpirun not found: run scripts/setup.sh" >&2
  exit 1
}

# The share of CPU time idle over one second, in percent.
idle_pct() {
  local a b
  read -r _ a1 a2 a3 a4 a5 a6 a7 _ </proc/stat
  sleep 1
  read -r _ b1 b2 b3 b4 b5 b6 b7 _ </proc/stat
  a=$((a1 + a2 + a3 + a4 + a5 + a6 + a7))
  b=$((b1 + b2 + b3 + b4 + b5 + b6 + b7))
  echo $(((b4 - a4) * 100 / (b - a > 0 ? b - a : 1)))
}
wait_idle() {
  local pct deadline=$((SECONDS + ${IDLE_WAIT:-600}))
  while :; do
    pct=$(idle_pct)
    ((pct >= 90)) && return 0
    ((SECONDS < deadline)) || break
    sleep 4
  done
  echo "multiworker-scaling: WARNING: CPUs only ${pct}% idle; figures are suspect" >&2
}

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size 256 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1,2 -o "$work/m.plan"

run_ours() { # name, command...
  local name=$1
  shift
  wait_idle
  echo "== $name: $*" >&2
  "$@" "$work/m.plan" --data synthetic --steps "$((steps + warmup))" \
    --warmup "$warmup" --log-every 0 --no-progress >"$work/out" 2>&1 ||
    { cat "$work/out" >&2; exit 1; }
  awk '/^images\/sec:/ { print $2 }' "$work/out" >>"$work/$name"
  grep -E '^(images/sec|step split)' "$work/out" >&2
}
run_ddp() { # name, workers
  wait_idle
  echo "== $1: pytorch_ddp_fashion.py --workers $2 --threads 1" >&2
  /usr/bin/python3 "$root/bench/pytorch_ddp_fashion.py" --workers "$2" \
    --threads 1 --steps "$steps" --warmup "$warmup" 2>/dev/null |
    tail -1 | tee -a /dev/stderr |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["images_per_sec"])' \
      >>"$work/$1"
}

for rep in $(seq "$reps"); do
  echo "--- repetition $rep of $reps" >&2
  run_ours one1 env OMP_NUM_THREADS=1 "$build/bin/graphrun" --cpus 1
  run_ours mpi2 env OMP_NUM_THREADS=1 "${mpirun[@]}" -np 2 "$build/bin/graphrun" --cpus 1
  run_ours rep2 env OMP_NUM_THREADS=2 "$build/bin/graphrun" --cpus 2
  run_ddp ddp1 1
  run_ddp ddp2 2
done

median() { sort -g "$work/$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
one1=$(median one1) mpi2=$(median mpi2) rep2=$(median rep2)
ddp1=$(median ddp1) ddp2=$(median ddp2)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

wait_idle
echo "== mpi-allreduce" >&2
"${mpirun[@]}" -np 2 "$build/bin/mpi-allreduce" --reps 3000 >"$work/ar"

echo
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "seed CNN, global batch 256, synthetic data, $warmup warm-up + $steps timed steps, median of $reps"
printf '%-36s %10s %11s\n' "" "images/s" "efficiency"
printf '%-36s %10.1f %11s\n' "ours, 1 worker x 1 thread" "$one1" ""
printf '%-36s %10.1f %11s\n' "ours, 2 workers x 1 thread (MPI)" "$mpi2" "$(ratio "$mpi2" "$(awk -v a="$one1" 'BEGIN { print 2 * a }')")"
printf '%-36s %10.1f %11s\n' "ours, 1 worker x 2 replicas" "$rep2" "$(ratio "$rep2" "$(awk -v a="$one1" 'BEGIN { print 2 * a }')")"
printf '%-36s %10.1f %11s\n' "PyTorch DDP gloo, 1 x 1 thread" "$ddp1" ""
printf '%-36s %10.1f %11s\n' "PyTorch DDP gloo, 2 x 1 thread" "$ddp2" "$(ratio "$ddp2" "$(awk -v a="$ddp1" 'BEGIN { print 2 * a }')")"
echo "ours / DDP at 2 workers: $(ratio "$mpi2" "$ddp2")x"
echo
cat "$work/ar"
