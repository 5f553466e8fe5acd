#!/usr/bin/env bash
# Time to a test accuracy on CPU: trains the seed Fashion-MNIST CNN on the
# real data with graphrun (cpu backend, 2 replicas of one thread each on a
# 2-core machine), evaluates on the whole test set after every epoch, and
# prints each epoch's accuracy and when the target was first reached.
#
#   bench/cpu-time-to-accuracy.sh [global-batch] [max-epochs] [target] [seed] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
batch="${1:-256}"
epochs="${2:-10}"
target="${3:-0.90}"
seed="${4:-0}"
build="${5:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/graph-import" "$root/examples/fashion_mnist_cnn.json" --batch-size "$batch" -o "$work/m.mlir"
"$build/bin/graphc" "$work/m.mlir" --replicas 2 -o "$work/m.plan"
per_epoch=$((60000 / batch))
start=$(date +%s.%N)
"$build/bin/graphrun" "$work/m.plan" --cpus 2 --data fashion_mnist --seed "$seed" \
  --epochs "$epochs" --eval-every "$per_epoch" --log-every 0 --no-progress \
  --metrics "$work/m.jsonl" | grep -E '^(eval at|images/sec)'
end=$(date +%s.%N)
/usr/bin/python3 - "$work/m.jsonl" "$target" "$per_epoch" "$start" "$end" <<'PY'
import json, sys
path, target, per_epoch, start, end = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
evals = [r for r in map(json.loads, open(path)) if r.get("eval")]
hit = next((r for r in evals if r["accuracy"] >= target), None)
best = max(evals, key=lambda r: r["accuracy"])
print("best test accuracy %.4f at step %d (epoch %.1f); whole run %.0f s" %
      (best["accuracy"], best["step"], best["step"] / per_epoch, end - start))
if hit:
    print("reached %.2f at step %d (epoch %.1f)" % (target, hit["step"], hit["step"] / per_epoch))
else:
    print("did not reach %.2f" % target)
PY
