#!/usr/bin/env bash
# fit() from Python (the graphc module) against graphrun, on the same plan
# and the same Fashion-MNIST arrays: images/s of each (the step timer's),
# alternated so that a change of load hits both, and the peak resident
# memory a fit adds over the arrays it is given (one copy of x: the input
# pipeline's float32 examples).
#
#   bench/python-fit.sh [epochs] [rounds] [build-dir]
#
# Both run the seed CNN at global batch 256 on 2 CPU replicas with the
# allocator settings graphrun's benchmarks use. Prints lscpu's model and
# flags and the load average first (take figures from an idle machine).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
epochs="${1:-2}"
rounds="${2:-3}"
build="${3:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python="$("$root/scripts/test-venv.sh")"

echo "machine: $(nproc) cores"
lscpu | grep -E '^(Model name|Flags):' | sed 's/  */ /g'
echo "load before: $(uptime | sed 's/.*load average/load average/')"
/usr/bin/python3 "$root/test/tools/graphrun/Inputs/fashion_mnist_arrays.py" "$work" >/dev/null
env MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 OMP_NUM_THREADS=2 \
  PYTHONPATH="$build/python" KERAS_BACKEND=numpy \
  "$python" "$root/bench/python_fit.py" "$work" "$build/bin/graphrun" "$epochs" "$rounds"
echo "load after: $(uptime | sed 's/.*load average/load average/')"
