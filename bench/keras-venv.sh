#!/usr/bin/env bash
# The TensorFlow/Keras peer's virtualenv, for bench scripts only (the tests
# never use it): tensorflow-cpu from PyPI, pinned, CPU build (no CUDA
# wheels). Idempotent: a second run finds the venv ready and only prints its
# interpreter.
#
#   bench/keras-venv.sh            # prints the venv's python on stdout
#
#   KERAS_VENV     where the venv lives (default: build/keras-venv, git-ignored)
#   KERAS_PYTHON   the interpreter that creates it (default: /usr/bin/python3
#                  when it has venv and ensurepip -- Debian 12's 3.11, with
#                  python3-venv from scripts/setup.sh -- else python3 on PATH)
#   TF_VERSION     the tensorflow-cpu version (default 2.21.0: Keras 3, wheels
#                  for Python 3.9-3.13)
#
# Progress goes to stderr; stdout carries only the venv's python, so that
# drivers can do  py=$(bench/keras-venv.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${KERAS_VENV:-$root/build/keras-venv}"
tf_version="${TF_VERSION:-2.21.0}"
stamp="$venv/.tensorflow-cpu-$tf_version"

if [[ -f "$stamp" && -x "$venv/bin/python" ]]; then
  echo "$venv/bin/python"
  exit 0
fi

pick_python() {
  if [[ -n "${KERAS_PYTHON:-}" ]]; then
    echo "$KERAS_PYTHON"
    return
  fi
  local candidate
  for candidate in /usr/bin/python3 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      command -v "$candidate"
      return
    fi
  done
  echo "no python3 with venv and ensurepip: apt-get install python3-venv (scripts/setup.sh does)" >&2
  exit 1
}

python="$(pick_python)"
echo "keras-venv: creating $venv with $python ($("$python" --version 2>&1)), tensorflow-cpu==$tf_version" >&2
start=$(date +%s)
# A venv left half-made by an interrupted run is rebuilt from scratch.
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "tensorflow-cpu==$tf_version" >&2
"$venv/bin/python" - >&2 <<'PY'
import tensorflow as tf, keras
print(f"keras-venv: tensorflow {tf.__version__}, keras {keras.__version__}")
PY
touch "$stamp"
echo "keras-venv: ready in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1)" >&2
echo "$venv/bin/python"
