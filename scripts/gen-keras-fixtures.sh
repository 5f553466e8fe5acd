#!/usr/bin/env bash
# Regenerate the Keras model JSON / .keras fixtures with real Keras from PyPI.
#
# Creates (or reuses) two throwaway virtual environments and runs
# scripts/gen_keras_fixtures.py in each:
#   KERAS_VENV (default <repo>/build/keras-venv): Keras 3 + JAX (CPU)
#       -> examples/*.json, test/frontends/keras/fixtures/*.keras
#   TF2_VENV   (default <repo>/build/tf2-venv):   tensorflow-cpu 2.15 (Keras 2)
#       -> test/frontends/keras/fixtures/tf2/*.json
#
# Nothing is installed into the system python. Needs network access to PyPI
# only on the first run (or after deleting a venv).
#
# Environment:
#   PYTHON      interpreter used to create the venvs (default: python3; the
#               pinned wheels need Python 3.11)
#   KERAS_VENV  path of the Keras 3 venv
#   TF2_VENV    path of the tf.keras 2 venv
#   SKIP_TF2=1  only generate the Keras 3 outputs
#   SKIP_KERAS3=1 only generate the tf2 outputs
#
# Usage: scripts/gen-keras-fixtures.sh   (from any directory)
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"

PYTHON="${PYTHON:-python3}"
KERAS_VENV="${KERAS_VENV:-${repo_root}/build/keras-venv}"
TF2_VENV="${TF2_VENV:-${repo_root}/build/tf2-venv}"

# Exact pins (the complete resolved sets, so regeneration is reproducible).
KERAS3_PKGS=(
  'keras==3.15.1'
  'jax[cpu]==0.10.2'
  'jaxlib==0.10.2'
  'absl-py==2.5.1'
  'h5py==3.16.0'
  'markdown-it-py==4.3.0'
  'mdurl==0.1.2'
  'ml-dtypes==0.6.0'
  'namex==0.1.0'
  'numpy==2.4.6'
  'opt-einsum==3.4.0'
  'optree==0.20.0'
  'packaging==26.3'
  'pygments==2.21.0'
  'rich==15.0.0'
  'scipy==1.17.1'
  'typing-extensions==4.16.0'
)
TF2_PKGS=(
  'tensorflow-cpu==2.15.1'
  'keras==2.15.0'
  'numpy==1.26.4'
  'ml-dtypes==0.3.2'
  'protobuf==4.25.9'
  'h5py==3.16.0'
  'tensorboard==2.15.2'
  'tensorflow-estimator==2.15.0'
  'wrapt==1.14.2'
)

# make_venv DIR STAMP_CONTENT PKG...
make_venv() {
  local venv="$1"; shift
  local stamp="${venv}/.fixture-pins"
  local want
  want="$(printf '%s\n' "$@")"
  if [[ -x "${venv}/bin/python" && -f "${stamp}" ]] &&
     [[ "$(cat "${stamp}")" == "${want}" ]]; then
    echo "reusing ${venv}"
    return
  fi
  if [[ ! -x "${venv}/bin/python" ]]; then
    echo "creating ${venv}"
    "${PYTHON}" -m venv "${venv}"
  fi
  "${venv}/bin/python" -m pip install --disable-pip-version-check -q \
    --upgrade pip
  "${venv}/bin/python" -m pip install --disable-pip-version-check "$@"
  printf '%s\n' "${want}" >"${stamp}"
}

# Keep Keras' config (~/.keras/keras.json) out of the user's home and away
# from any user settings (image_data_format, floatx, backend) that would
# change the generated configs.
export PYTHONHASHSEED=0
export CUDA_VISIBLE_DEVICES=""
export JAX_PLATFORMS=cpu

if [[ "${SKIP_KERAS3:-0}" != 1 ]]; then
  make_venv "${KERAS_VENV}" "${KERAS3_PKGS[@]}"
  mkdir -p "${KERAS_VENV}/keras-home"
  KERAS_HOME="${KERAS_VENV}/keras-home" KERAS_BACKEND=jax \
    "${KERAS_VENV}/bin/python" "${script_dir}/gen_keras_fixtures.py" \
      --flavor keras3 --repo-root "${repo_root}"
fi

if [[ "${SKIP_TF2:-0}" != 1 ]]; then
  make_venv "${TF2_VENV}" "${TF2_PKGS[@]}"
  mkdir -p "${TF2_VENV}/keras-home"
  KERAS_HOME="${TF2_VENV}/keras-home" TF_CPP_MIN_LOG_LEVEL=2 \
    "${TF2_VENV}/bin/python" "${script_dir}/gen_keras_fixtures.py" \
      --flavor tf2 --repo-root "${repo_root}"
fi
