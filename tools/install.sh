#!/usr/bin/env bash
# Installs the mmdet3d 1.4 stack and this package into a virtual environment.
#
# Usage: bash tools/install.sh [VENV_DIR]   (default: .venv)
#
# torch: the CPU build (torch==2.13.0) where no CUDA GPU is present; set
#   TORCH_SPEC (e.g. TORCH_SPEC='torch==2.1.2' with PIP_INDEX_URL for your
#   CUDA) to choose another, or SKIP_TORCH=1 to keep the torch already in the
#   environment.
# mmcv 2.1.0: pip takes a wheel from PIP_FIND_LINKS when one fits, otherwise it
#   compiles from source with its ops (about 11 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PYTHON=${PYTHON:-python3}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
# The work area's prebuilt mmcv wheel (shared/wheels beside the checkout),
# when there is one: appended to the machine's own PIP_FIND_LINKS.
if [ -d ../shared/wheels ]; then
  export PIP_FIND_LINKS="${PIP_FIND_LINKS:+$PIP_FIND_LINKS }$(cd ../shared/wheels && pwd)"
fi
PIP=("$PY" -m pip install --disable-pip-version-check -c requirements/constraints.txt)

"${PIP[@]}" -r requirements/build.txt

if [ "${SKIP_TORCH:-0}" != 1 ]; then
  if [ -z "${TORCH_SPEC:-}" ]; then
    TORCH_SPEC='torch==2.13.0'
  fi
  "$PY" -c "import torch" 2>/dev/null || "${PIP[@]}" "$TORCH_SPEC"
fi

if ! "$PY" -c "import mmcv, mmcv.ops" 2>/dev/null; then
  if ! command -v nvcc >/dev/null || ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    export FORCE_CUDA=0
  fi
  MMCV_WITH_OPS=1 MAX_JOBS=${MAX_JOBS:-$(nproc)} \
    "${PIP[@]}" --no-build-isolation 'mmcv==2.1.0'
fi

"${PIP[@]}" -r requirements/mminstall.txt -r requirements/runtime.txt -r requirements/tests.txt
"${PIP[@]}" --no-deps --no-build-isolation -e .
"$PY" -c "import mmcv.ops, mmdet3d, nuscenes, projects.mmdet3d_plugin; print('install ok: mmcv', mmcv.__version__, 'mmdet3d', mmdet3d.__version__)"
