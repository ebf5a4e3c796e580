#!/usr/bin/env bash
# Usage: tools/dist_train.sh CONFIG GPUS [train.py args...]
# Starts GPUS processes on this node with torchrun. Multi-node: set NNODES,
# NODE_RANK, MASTER_ADDR and PORT (the same PORT and MASTER_ADDR on every
# node). Without CUDA the processes train on CPU over gloo.
# DOCTOR=1 runs tools/doctor.py on the config and the train.py args first,
# and stops on a failure.
# MAX_RESTARTS=N: when a rank fails, torchrun restarts all of them, up to N
# times; each restart resumes by itself from the newest complete checkpoint
# of the work dir and logs one line (attempt, file, iteration, iterations
# lost).
# When ranks fail, a root-cause report is printed last (tools/dist_run.py,
# tools/failure_report.py) and saved as <work_dir>/failure_report.json.
set -euo pipefail

CONFIG=$1
GPUS=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
MAX_RESTARTS=${MAX_RESTARTS:-0}
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Error files of this launch: <work_dir>/torchrun_logs/<date>_<host>_<pid>/
# (tools/dist_run.py), or a folder of its own under $TORCHRUN_LOG_DIR.
LOG_DIR_ARG=()
if [ -n "${TORCHRUN_LOG_DIR:-}" ]; then
  LOG_DIR_ARG=(--log-dir="$TORCHRUN_LOG_DIR/$(date +%Y%m%d_%H%M%S)_$$")
fi

if [ "${DOCTOR:-0}" = 1 ] && [ "$NODE_RANK" = 0 ]; then
  "$PYTHON" "$ROOT/tools/doctor.py" "$CONFIG" --world-size $((NNODES * GPUS)) \
    --launcher pytorch --train-args "${@:3}" \
    || { echo "dist_train.sh: tools/doctor.py found a failure; fix it or run without DOCTOR=1" >&2; exit 1; }
fi

exec "$PYTHON" "$ROOT/tools/dist_run.py" \
    ${LOG_DIR_ARG[@]+"${LOG_DIR_ARG[@]}"} \
    --nnodes="$NNODES" \
    --node_rank="$NODE_RANK" \
    --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$GPUS" \
    --master_port="$PORT" \
    --max-restarts="$MAX_RESTARTS" \
    "$ROOT/tools/train.py" \
    "$CONFIG" \
    --launcher pytorch "${@:3}"
