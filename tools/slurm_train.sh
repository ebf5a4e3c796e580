#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [GRES=gpu:8] [SRUN_ARGS=...] \
#   tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [train.py args...]
#
# The resources, the environment and the failure report (saved as
# WORK_DIR/failure_report.json) are tools/slurm_env.sh's, shared with
# tools/slurm_test.sh: from a login node srun creates a job of its own; as
# the body of an sbatch job (SLURM_JOB_ID set) it runs a step of that job,
# sized as the job. Preemption:
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
# The settings both Slurm scripts share: tools/slurm_env.sh. `sbatch
# tools/slurm_train.sh ...` runs a copy of this script (slurmd's
# spool/jobN/slurm_script): the tools folder is then the submitted
# script's (scontrol's Command=SCRIPT ARGS...), else the submit directory's.
TOOLS="$(dirname "$0")"
if [ ! -f "$TOOLS/slurm_env.sh" ] && [ -n "${SLURM_JOB_ID:-}" ]; then
  COMMAND=$(scontrol show job "$SLURM_JOB_ID" | sed -n 's/^ *Command=//p')
  TOOLS="$(dirname "${COMMAND% "$*"}")"
  [ -f "$TOOLS/slurm_env.sh" ] || TOOLS="${SLURM_SUBMIT_DIR:-$PWD}/tools"
fi
# shellcheck source=tools/slurm_env.sh
source "$TOOLS/slurm_env.sh"
PREEMPTED=85  # projects.mmdet3d_plugin.constants.PREEMPTED_EXIT_CODE
TRAIN=("$PYTHON" -u "$ROOT/tools/train.py" "$CONFIG" --work-dir="$WORK_DIR"
    --launcher=slurm "${@:5}")

set +e
SIGNALLED=""
if [ -z "${SLURM_JOB_ID:-}" ]; then
  "${SRUN[@]}" "${TRAIN[@]}"
  STATUS=$?
else
  # In the background, so that the traps run while srun does; `wait`
  # returns early (status > 128) when a trap ran, so wait again.
  "${SRUN[@]}" "${TRAIN[@]}" &
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
  slurm_failure_report "$STATUS"
fi
exit "$STATUS"
