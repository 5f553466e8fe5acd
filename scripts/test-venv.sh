#!/usr/bin/env bash
# The tests' Python venv: real Keras 3 (its numpy backend: load_model,
# evaluate, the callbacks' own classes) and the tensorboard package (reads
# our event files back), pinned, from PyPI; pytest, scikit-build-core and
# pybind11 for the Python module (scripts/build.sh builds it against this
# venv's pybind11, pip install . installs it, pytest tests it). JAX (CPU) comes because Keras'
# numpy backend imports it, and lets a test train a loaded model; no
# TensorFlow: the tests that need its numbers read fixtures it wrote once.
# Idempotent: a second run finds the venv ready and only prints its python.
#
#   scripts/test-venv.sh       # prints the venv's python on stdout
#
#   TEST_VENV   where the venv lives (default: build/test-venv, git-ignored)
#
# Called by scripts/setup.sh, so that both README commands and CI have it;
# lit's %keras_python is its interpreter (test/lit.cfg.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TEST_VENV:-$root/build/test-venv}"
packages=(keras==3.15.1 jax==0.10.2 jaxlib==0.10.2 tensorboard==2.21.0 h5py==3.14.0 numpy==2.2.6 scipy==1.15.3 pytest==9.2.0 scikit-build-core==1.1.2 pybind11==2.13.6)
stamp="$venv/.packages-$(echo "${packages[*]}" | md5sum | cut -c1-12)"

if [[ -f "$stamp" && -x "$venv/bin/python" ]]; then
  echo "$venv/bin/python"
  exit 0
fi
echo "test-venv: making $venv (${packages[*]})" >&2
# Debian 12's python3 (3.11) with python3-venv, from scripts/setup.sh; the
# python3 on PATH may be another one without ensurepip.
/usr/bin/python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q --disable-pip-version-check "${packages[@]}" >&2
touch "$stamp"
echo "$venv/bin/python"
