#!/usr/bin/env bash
# Usage: tools/dist_test.sh CONFIG CHECKPOINT GPUS [test.py args...]
# Same environment variables (and failure report) as tools/dist_train.sh.
set -euo pipefail

CONFIG=$1
CHECKPOINT=$2
GPUS=$3
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Error files of this launch: <work_dir>/torchrun_logs/<date>_<host>_<pid>/
# (tools/dist_run.py), or a folder of its own under $TORCHRUN_LOG_DIR.
LOG_DIR_ARG=()
if [ -n "${TORCHRUN_LOG_DIR:-}" ]; then
  LOG_DIR_ARG=(--log-dir="$TORCHRUN_LOG_DIR/$(date +%Y%m%d_%H%M%S)_$$")
fi

exec "$PYTHON" "$ROOT/tools/dist_run.py" \
    ${LOG_DIR_ARG[@]+"${LOG_DIR_ARG[@]}"} \
    --nnodes="$NNODES" \
    --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$GPUS" \
    --master_port="$PORT" \
    "$ROOT/tools/test.py" \
    "$CONFIG" \
    "$CHECKPOINT" \
    --launcher pytorch "${@:4}"
