#!/usr/bin/env bash
# Mixed precision check on one GPU (<= 5 min): fp32 vs fp16 vs bf16 vs
# fp16 + x4 accumulation on mmdet3d's full-size CenterPoint pillar02 model
# with random point clouds (no dataset). Prints a table and writes JSON.
#
# Needs the plugin installed (pip install -e .) with torch + CUDA, mmcv 2.x
# compiled with CUDA ops, mmdet 3.x and mmdet3d 1.x; the script checks this
# first and says what is missing (exit status 2).
#
#   benchmarks/gpu_amp_check.sh                       # on the GPU
#   benchmarks/gpu_amp_check.sh --device cpu --iters 2  # CPU smoke test
#
# Environment: PYTHON (default python), OUT (folder for the JSON, default
# work_dirs/benchmarks), TIMEOUT (seconds, default 300).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
OUT_DIR=${OUT:-work_dirs/benchmarks}
mkdir -p "$OUT_DIR"
exec timeout "${TIMEOUT:-300}" "$PYTHON" benchmarks/gpu_amp_check.py \
    --out "$OUT_DIR/gpu_amp_check.json" "$@"
