#!/usr/bin/env bash
# Configures (once) and builds everything into build/ with Ninja.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GRAPH_BUILD_DIR:-$root/build}"
# The Python module builds against the test venv's pybind11 (PyPI's: it
# knows NumPy 2), when scripts/setup.sh has made the venv.
venv_python="${TEST_VENV:-$root/build/test-venv}/bin/python"
pybind11_dir=""
if [[ -x "$venv_python" ]]; then
  pybind11_dir="$("$venv_python" -m pybind11 --cmakedir 2>/dev/null || true)"
fi
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH=/usr/lib/llvm-22 \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    ${pybind11_dir:+-Dpybind11_DIR="$pybind11_dir"}
elif [[ -n "$pybind11_dir" ]] && ! grep -q "^pybind11_DIR:PATH=$pybind11_dir\$" "$build/CMakeCache.txt"; then
  cmake -S "$root" -B "$build" -Dpybind11_DIR="$pybind11_dir" >/dev/null
fi
ninja -C "$build" "$@"
