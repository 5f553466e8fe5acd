#!/usr/bin/env bash
# The PyTorch peer of the CPU benchmarks: Debian's python3-torch (PyTorch
# 1.13 with oneDNN 2.6.3, the oneDNN ours links), installed if it is
# missing. Run by every bench script that times PyTorch, before its first
# /usr/bin/python3 peer.
set -euo pipefail
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "installing python3-torch (Debian) for the comparison"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
