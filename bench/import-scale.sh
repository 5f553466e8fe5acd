#!/usr/bin/env bash
# graph-import's time against the number of layers: Keras 3 Sequential
# chains of 1k, 10k and 100k layers (an InputLayer of 4 features, Dense(4,
# relu) layers and a Dense(10, softmax) head, categorical_crossentropy;
# bench/import_scale_model.py writes them, one short line a layer). Goal: the
# 100k-layer chain in under 5 s. Reports the best of 3 runs of
# `graph-import model.json -o model.mlir` (wall and user+sys CPU seconds,
# peak RSS), then graphc's time on the imported module, once, for chains up
# to GRAPHC_MAX_LAYERS layers (default 10000: graphc is not this goal).
#
#   bench/import-scale.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
graphc_max="${GRAPHC_MAX_LAYERS:-10000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Prints "wall cpu max_rss_mib" for one run of "$@" (GNU time).
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" ||
    { echo "failed: $*" >&2; tail -3 "$work/stderr" >&2; return 1; }
  awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 / 1024 }' "$work/time"
}

printf '%-8s %10s %12s %12s %10s\n' layers json_MiB import_wall import_cpu rss_MiB
for layers in 1000 10000 100000; do
  json="$work/chain$layers.json" mlir="$work/chain$layers.mlir"
  python3 "$root/bench/import_scale_model.py" "$layers" > "$json"
  best=""
  for _ in 1 2 3; do
    run=$(measure "$build/bin/graph-import" "$json" -o "$mlir")
    best=$(printf '%s\n%s\n' "$best" "$run" | awk 'NF' | sort -n | head -1)
  done
  read -r wall cpu rss <<< "$best"
  printf '%-8s %10.1f %12s %12s %10s\n' "$layers" \
    "$(awk -v b="$(stat -c %s "$json")" 'BEGIN { print b / 1048576 }')" \
    "$wall" "$cpu" "$rss"
done

echo
echo "graphc (default flags: programs for 1, 2, 4 and 8 replicas), one run:"
printf '%-8s %12s %12s %10s\n' layers graphc_wall graphc_cpu rss_MiB
for layers in 1000 10000 100000; do
  ((layers <= graphc_max)) || continue
  if run=$(measure "$build/bin/graphc" "$work/chain$layers.mlir" -o "$work/chain$layers.plan"); then
    read -r wall cpu rss <<< "$run"
    printf '%-8s %12s %12s %10s\n' "$layers" "$wall" "$cpu" "$rss"
  else
    printf '%-8s %12s\n' "$layers" "failed"
  fi
done
