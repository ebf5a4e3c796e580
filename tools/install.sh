#!/usr/bin/env bash
# Installs the mmdet3d 1.4 stack and this package into a virtual environment.
#
# Usage: bash tools/install.sh [VENV_DIR]   (default: .venv)
#
# torch: the CPU build (torch==2.13.0) unless TORCH_SPEC names another (e.g.
#   TORCH_SPEC='torch==2.1.2', the torch of OpenMMLab's own mmcv 2.1.0
#   wheels; with PIP_INDEX_URL for your CUDA), or SKIP_TORCH=1 keeps the torch
#   already in the environment. docs/install.md lists the stacks that were run.
# mmcv 2.1.0 with ops, from the first of:
#   - a prebuilt wheel for the installed torch in the work area's
#     ../shared/wheels (torch-X.Y.Z/ for torch X.Y.Z, the folder itself for
#     torch 2.13.0), appended to PIP_FIND_LINKS;
#   - OpenMMLab's wheel index for the installed torch / CUDA pair (torch 2.0
#     or 2.1 with CUDA 11.7, 11.8 or 12.1), appended to PIP_FIND_LINKS;
#   - compiled from source (11-15 minutes on 2 cores; with CUDA, nvcc and
#     TORCH_CUDA_ARCH_LIST).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PYTHON=${PYTHON:-python3}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check -c requirements/constraints.txt)

"${PIP[@]}" -r requirements/build.txt

if [ "${SKIP_TORCH:-0}" != 1 ]; then
  if [ -n "${TORCH_SPEC:-}" ] && "$PY" -c "import torch" 2>/dev/null; then
    # A torch is there already: it must be the one asked for.
    "$PY" - "$TORCH_SPEC" "$VENV" <<'PYEOF'
import sys
import torch
from packaging.requirements import Requirement
spec, venv = sys.argv[1:]
# '==2.1.2' takes 2.1.2+cu121 too (PEP 440 ignores the local part then).
if not Requirement(spec).specifier.contains(torch.__version__,
                                            prereleases=True):
    sys.exit(f'install: {venv} holds torch {torch.__version__}, not '
             f'{spec}. Fix: rm -rf {venv} (make clean-venv) and install '
             'again, or install into another folder: '
             f'bash tools/install.sh .venv-other')
PYEOF
  fi
  TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
  "$PY" -c "import torch" 2>/dev/null || "${PIP[@]}" "$TORCH_SPEC"
fi

# The installed torch decides where mmcv comes from (mmcv's ops link against
# one exact torch).
read -r TORCH_VERSION TORCH_CUDA < <("$PY" -c "import torch; print(torch.__version__.split('+')[0], torch.version.cuda or 'cpu')")
append_find_links() { export PIP_FIND_LINKS="${PIP_FIND_LINKS:+$PIP_FIND_LINKS }$1"; }
MMCV_SOURCE=''
if [ -d "../shared/wheels/torch-$TORCH_VERSION" ]; then
  MMCV_SOURCE=$(cd "../shared/wheels/torch-$TORCH_VERSION" && pwd)
elif [ -d ../shared/wheels ] && [ "$TORCH_VERSION" = 2.13.0 ] && [ "$TORCH_CUDA" = cpu ]; then
  MMCV_SOURCE=$(cd ../shared/wheels && pwd)
elif [ "$TORCH_CUDA" != cpu ] && "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  TORCH_MINOR=${TORCH_VERSION%.*}
  CU="cu${TORCH_CUDA//./}"
  case "$TORCH_MINOR/$CU" in
    2.0/cu117|2.0/cu118|2.1/cu118|2.1/cu121)
      MMCV_SOURCE="https://download.openmmlab.com/mmcv/dist/$CU/torch$TORCH_MINOR/index.html" ;;
  esac
fi

if ! "$PY" -c "import mmcv, mmcv.ops" 2>/dev/null; then
  if [ -n "$MMCV_SOURCE" ]; then
    echo "install: mmcv 2.1.0 for torch $TORCH_VERSION ($TORCH_CUDA) from $MMCV_SOURCE"
    append_find_links "$MMCV_SOURCE"
  else
    echo "install: no prebuilt mmcv 2.1.0 for torch $TORCH_VERSION ($TORCH_CUDA): compiling it from source with its ops (11-15 minutes on 2 cores)."
    echo "install: a CUDA build needs nvcc of torch's CUDA ($TORCH_CUDA) and TORCH_CUDA_ARCH_LIST (e.g. '8.0;9.0'); setuptools<82 and --no-build-isolation are set here."
  fi
  if ! command -v nvcc >/dev/null || ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    export FORCE_CUDA=0
  fi
  MMCV_WITH_OPS=1 MAX_JOBS=${MAX_JOBS:-$(nproc)} \
    "${PIP[@]}" --no-build-isolation 'mmcv==2.1.0'
fi

"${PIP[@]}" -r requirements/mminstall.txt -r requirements/runtime.txt -r requirements/tests.txt
"${PIP[@]}" --no-deps --no-build-isolation -e .
"$PY" -c "import torch, mmcv.ops, mmdet3d, nuscenes, projects.mmdet3d_plugin; print('install ok: torch', torch.__version__, 'mmcv', mmcv.__version__, 'mmdet3d', mmdet3d.__version__)"
