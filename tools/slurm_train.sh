#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [SRUN_ARGS=...] \
#   tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [train.py args...]
set -euxo pipefail

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
WORK_DIR=$4
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Each task writes its torch elastic error file (and rank_info.json) to
# $LOG_DIR/<rank>/; after srun, tools/failure_report.py explains a failure.
LOG_DIR="${FAILURE_LOG_DIR:-$WORK_DIR/error_files/$(date +%Y%m%d_%H%M%S)_$$}"
mkdir -p "$LOG_DIR"
# Run inside each task: its own error file, then the command.
# shellcheck disable=SC2016
PER_TASK='export TORCHELASTIC_ERROR_FILE="$0/$SLURM_PROCID/error.json"; mkdir -p "$0/$SLURM_PROCID"; exec "$@"'

set +e
# shellcheck disable=SC2086
srun -p "$PARTITION" \
    --job-name="$JOB_NAME" \
    --gres=gpu:"$GPUS_PER_NODE" \
    --ntasks="$GPUS" \
    --ntasks-per-node="$GPUS_PER_NODE" \
    --cpus-per-task="$CPUS_PER_TASK" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    bash -c "$PER_TASK" "$LOG_DIR" \
    "$PYTHON" -u "$ROOT/tools/train.py" "$CONFIG" --work-dir="$WORK_DIR" \
    --launcher=slurm "${@:5}"
STATUS=$?
set +x
set -e
if [ "$STATUS" -ne 0 ]; then
  "$PYTHON" "$ROOT/tools/failure_report.py" "$LOG_DIR" --exit-code "$STATUS" \
      --work-dir "$WORK_DIR" || true
fi
exit "$STATUS"
