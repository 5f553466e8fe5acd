#!/usr/bin/env bash
# How long a resumed run takes to get going, early and late in a run: the
# checkpoint of step 10 and of step 100,000 (tiny_cnn, global batch 8,
# synthetic data, shuffle buffer 5000: 100,000 steps are 13 epochs), each
# resumed to train one more step. The pipeline opens at the checkpoint's
# batch (it replays at most one epoch of shuffle draws on positions), so
# both take the same time; replaying the batches, as resuming did before,
# grows with the step.
#
#   bench/resume-time.sh [late-step] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
late="${1:-100000}"
build="${2:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/graph-import" "$root/test/tools/graphrun/Inputs/tiny_cnn.json" --batch-size 8 -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 1 -o "$work/m.plan"
run() { # checkpoint-dir steps
  "$build/bin/graphrun" "$work/m.plan" --data synthetic --cpus 1 --log-every 0 \
    --no-progress --checkpoint-dir "$1" --checkpoint-every 0 --steps "$2" >/dev/null
}
echo "training to step 10 and to step $late (one checkpoint at the end of each)"
run "$work/early" 10
run "$work/late" "$late"

seconds() { # pristine-checkpoint-dir steps
  local start end
  rm -rf "$work/scratch" && cp -r "$1" "$work/scratch"
  start=$(date +%s.%N)
  run "$work/scratch" "$2"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}
printf '%-36s %10s\n' "resume and train one step" "seconds"
for i in 1 2 3; do
  printf '%-36s %10s\n' "from step 10 (run $i)" "$(seconds "$work/early" 11)"
  printf '%-36s %10s\n' "from step $late (run $i)" "$(seconds "$work/late" "$((late + 1))")"
done
