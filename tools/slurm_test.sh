#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [GRES=gpu:8] [SRUN_ARGS=...] \
#   tools/slurm_test.sh PARTITION JOB_NAME CONFIG CHECKPOINT [test.py args...]
# The resources as in tools/slurm_train.sh: GRES= omits --gres; inside an
# allocation (sbatch, salloc) the defaults are the job's.
set -euxo pipefail

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
CHECKPOINT=$4
if [ -n "${SLURM_JOB_ID:-}" ]; then  # inside an allocation: its sizes
  GPUS=${GPUS:-${SLURM_NTASKS:-1}}
  GPUS_PER_NODE=${GPUS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-$((GPUS / ${SLURM_JOB_NUM_NODES:-1}))}}
  CPUS_PER_TASK=${CPUS_PER_TASK:-${SLURM_CPUS_PER_TASK:-1}}
  GRES=${GRES:-}
else
  GPUS=${GPUS:-8}
  GPUS_PER_NODE=${GPUS_PER_NODE:-8}
  CPUS_PER_TASK=${CPUS_PER_TASK:-5}
  GRES=${GRES-gpu:$GPUS_PER_NODE}
fi
SRUN_ARGS=${SRUN_ARGS:-""}
PYTHON=${PYTHON:-python}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$ROOT/tools/test.py" ] && [ -n "${SLURM_JOB_ID:-}" ]; then
  # `sbatch tools/slurm_test.sh ...` runs a copy (slurmd's spool): the
  # repository is the submitted script's (Command=SCRIPT ARGS...).
  COMMAND=$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=//p')
  ROOT="$(cd "$(dirname "${COMMAND% "$*"}")/.." 2>/dev/null && pwd \
      || echo "${SLURM_SUBMIT_DIR:-$PWD}")"
fi

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Each task writes its torch elastic error file (and rank_info.json) to
# $LOG_DIR/<rank>/; after srun, tools/failure_report.py explains a failure.
LOG_DIR="${FAILURE_LOG_DIR:-work_dirs/slurm_error_files/$(date +%Y%m%d_%H%M%S)_$$}"
mkdir -p "$LOG_DIR"
# Run inside each task: its own error file, then the command.
# shellcheck disable=SC2016
PER_TASK='export TORCHELASTIC_ERROR_FILE="$0/$SLURM_PROCID/error.json"; mkdir -p "$0/$SLURM_PROCID"; exec "$@"'

set +e
# shellcheck disable=SC2086
srun -p "$PARTITION" \
    --job-name="$JOB_NAME" \
    ${GRES:+--gres="$GRES"} \
    --ntasks="$GPUS" \
    --ntasks-per-node="$GPUS_PER_NODE" \
    --cpus-per-task="$CPUS_PER_TASK" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    bash -c "$PER_TASK" "$LOG_DIR" \
    "$PYTHON" -u "$ROOT/tools/test.py" "$CONFIG" "$CHECKPOINT" \
    --launcher=slurm "${@:5}"
STATUS=$?
set +x
set -e
if [ "$STATUS" -ne 0 ]; then
  "$PYTHON" "$ROOT/tools/failure_report.py" "$LOG_DIR" --exit-code "$STATUS" || true
fi
exit "$STATUS"
