#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [GRES=gpu:8] [SRUN_ARGS=...] \
#   tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [train.py args...]
#
# From a login node, srun creates a job of its own: GPUS tasks,
# GPUS_PER_NODE per node, CPUS_PER_TASK CPUs each, --gres=$GRES (default
# gpu:$GPUS_PER_NODE; GRES= omits --gres, for nodes without GPUs).
#
# As the body of an sbatch job (SLURM_JOB_ID set), srun runs a step of that
# job: GPUS, GPUS_PER_NODE and CPUS_PER_TASK default to the job's tasks,
# tasks per node and CPUs per task, and the step gets the job's GPUs
# (--gres only when GRES is set). Preemption:
#   - SIGUSR1 to the batch shell (#SBATCH --signal=B:USR1@120, sent 120 s
#     before the time limit to this shell only) is forwarded to srun, which
#     passes it on to every task;
#   - SIGTERM to the batch shell (scontrol requeue, preemption, scancel, the
#     time limit) is not forwarded: Slurm sends SIGCONT and SIGTERM to every
#     process of the job, tasks included, then SIGKILL KillWait seconds later
#     (slurm.conf, default 30 s); srun given SIGTERM forwards SIGKILL, which
#     Slurm refuses only because the job is already ending.
# On either signal every rank finishes its iteration, rank 0 saves its
# checkpoint, and the tasks exit with status 85 (PREEMPTED_EXIT_CODE). On 85
# after SIGUSR1, or with no signal here (a preemption's GraceTime signals the
# tasks alone), this script requeues the job (scontrol requeue; needs
# --requeue or JobRequeue=1); after SIGTERM Slurm is ending the job itself
# and requeues it if that is what it is doing (scancel stays cancelled). A
# requeued job pends (Reason=BeginTime) for cred_expire + 1 s (AuthInfo,
# default 120 s), starts again by itself at the next scheduling pass and
# reruns this script with SLURM_RESTART_COUNT=1, 2, ...; tools/train.py then
# resumes from the newest checkpoint in WORK_DIR. The script exits 85 when
# its run was preempted (requeued or not), else srun's status.
set -euxo pipefail

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
WORK_DIR=$4
if [ -n "${SLURM_JOB_ID:-}" ]; then
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
if [ ! -f "$ROOT/tools/train.py" ] && [ -n "${SLURM_JOB_ID:-}" ]; then
  # `sbatch tools/slurm_train.sh ...` runs a copy (slurmd's
  # spool/jobN/slurm_script): the repository is the submitted script's
  # (scontrol's Command=SCRIPT ARGS...), else the submit directory.
  COMMAND=$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=//p')
  ROOT="$(cd "$(dirname "${COMMAND% "$*"}")/.." 2>/dev/null && pwd \
      || echo "${SLURM_SUBMIT_DIR:-$PWD}")"
fi
PREEMPTED=85  # projects.mmdet3d_plugin.constants.PREEMPTED_EXIT_CODE

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Each task writes its torch elastic error file (and rank_info.json) to
# $LOG_DIR/<rank>/; after srun, tools/failure_report.py explains a failure.
LOG_DIR="${FAILURE_LOG_DIR:-$WORK_DIR/error_files/$(date +%Y%m%d_%H%M%S)_$$}"
mkdir -p "$LOG_DIR"
# Run inside each task: its own error file, then the command, whose exit
# status goes to $LOG_DIR/<rank>/exit_status: --kill-on-bad-exit ends the
# ranks still exiting when the first one exits 85, and srun then reports
# their 143. (The shell waits for the command on SIGTERM / SIGUSR1, which
# reach the command too.)
# shellcheck disable=SC2016
PER_TASK='export TORCHELASTIC_ERROR_FILE="$0/$SLURM_PROCID/error.json"; mkdir -p "$0/$SLURM_PROCID"; trap : TERM USR1; "$@"; status=$?; echo "$status" >"$0/$SLURM_PROCID/exit_status"; exit "$status"'
SRUN=(srun -p "$PARTITION"
    --job-name="$JOB_NAME"
    ${GRES:+--gres="$GRES"}
    --ntasks="$GPUS"
    --ntasks-per-node="$GPUS_PER_NODE"
    --cpus-per-task="$CPUS_PER_TASK"
    --kill-on-bad-exit=1)

set +e
SIGNALLED=""
if [ -z "${SLURM_JOB_ID:-}" ]; then
  # shellcheck disable=SC2086
  "${SRUN[@]}" ${SRUN_ARGS} \
      bash -c "$PER_TASK" "$LOG_DIR" \
      "$PYTHON" -u "$ROOT/tools/train.py" "$CONFIG" --work-dir="$WORK_DIR" \
      --launcher=slurm "${@:5}"
  STATUS=$?
else
  # In the background, so that the traps run while srun does; `wait`
  # returns early (status > 128) when a trap ran, so wait again.
  # shellcheck disable=SC2086
  "${SRUN[@]}" ${SRUN_ARGS} \
      bash -c "$PER_TASK" "$LOG_DIR" \
      "$PYTHON" -u "$ROOT/tools/train.py" "$CONFIG" --work-dir="$WORK_DIR" \
      --launcher=slurm "${@:5}" &
  SRUN_PID=$!
  trap 'SIGNALLED=${SIGNALLED:-USR1}; kill -USR1 "$SRUN_PID"' USR1
  trap 'SIGNALLED=TERM' TERM
  while true; do
    wait "$SRUN_PID"
    STATUS=$?
    kill -0 "$SRUN_PID" 2>/dev/null || break
  done
  # Keep SIGTERM trapped: `scontrol requeue` below sends it to this shell.
  trap '' USR1
fi
set +x
set -e
# One rank exiting 85 means the checkpoint is saved (every rank waits for it).
if grep -qsx "$PREEMPTED" "$LOG_DIR"/*/exit_status; then
  STATUS=$PREEMPTED
fi
if [ "$STATUS" -eq "$PREEMPTED" ]; then
  if [ -z "${SLURM_JOB_ID:-}" ]; then
    echo "slurm_train.sh: preempted; the checkpoint of the last iteration is" \
        "in $WORK_DIR: rerun with --resume to continue" >&2
  elif [ "$SIGNALLED" = TERM ]; then
    echo "slurm_train.sh: preempted by SIGTERM; Slurm ends job" \
        "$SLURM_JOB_ID itself (and requeues it if it is requeuing it)" >&2
  else
    echo "slurm_train.sh: preempted (${SIGNALLED:-tasks signalled});" \
        "requeuing job $SLURM_JOB_ID" >&2
    scontrol requeue "$SLURM_JOB_ID" >&2 || echo "slurm_train.sh: could" \
        "not requeue job $SLURM_JOB_ID (sbatch --requeue?); resubmit it to" \
        "continue" >&2
  fi
elif [ "$STATUS" -ne 0 ]; then
  "$PYTHON" "$ROOT/tools/failure_report.py" "$LOG_DIR" --exit-code "$STATUS" \
      --work-dir "$WORK_DIR" || true
fi
exit "$STATUS"
