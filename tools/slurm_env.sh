# shellcheck shell=bash
# The Slurm settings of tools/slurm_train.sh and tools/slurm_test.sh, which
# `source` this file after setting PARTITION, JOB_NAME and WORK_DIR; they
# differ only in what they run.
#
# Environment (all optional):
#   GPUS, GPUS_PER_NODE, CPUS_PER_TASK  tasks, tasks per node, CPUs per task
#   GRES             --gres of the tasks; GRES= omits it (nodes without GPUs)
#   SRUN_ARGS        more srun options, split on spaces
#   PYTHON           the interpreter of the tasks and of the report
#   MASTER_PORT / PORT  the rendezvous port of the tasks (MASTER_PORT first,
#                    then PORT as in tools/dist_train.sh; default 29500,
#                    mmengine's)
#   FAILURE_LOG_DIR  the folder of the tasks' error files
# From a login node, srun creates a job of its own: GPUS tasks (default 8),
# GPUS_PER_NODE per node (8), CPUS_PER_TASK CPUs each (5), --gres=$GRES
# (default gpu:$GPUS_PER_NODE). Inside an allocation (sbatch, salloc:
# SLURM_JOB_ID set), srun runs a step of that job: the sizes default to the
# job's tasks, tasks per node and CPUs per task, and the step gets the job's
# GPUs (--gres only when GRES is set).
#
# Sets ROOT (the repository), PYTHON, exports PYTHONPATH and MASTER_PORT,
# creates LOG_DIR (under WORK_DIR), and sets SRUN: the srun command line up
# to the task's own command, which a script appends:
#   "${SRUN[@]}" "$PYTHON" -u "$ROOT/tools/train.py" ...
# Defines slurm_failure_report STATUS: tools/failure_report.py on LOG_DIR,
# the report also saved as $WORK_DIR/failure_report.json.

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
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# srun passes the environment on to the tasks (--export=ALL).
export MASTER_PORT=${MASTER_PORT:-${PORT:-29500}}

# Each task writes its torch elastic error file (and rank_info.json) to
# $LOG_DIR/<rank>/; after srun, tools/failure_report.py explains a failure.
# (An absolute path: the tasks may run in another folder, srun --chdir.)
LOG_DIR="${FAILURE_LOG_DIR:-$WORK_DIR/error_files/$(date +%Y%m%d_%H%M%S)_$$}"
mkdir -p "$LOG_DIR"
LOG_DIR="$(cd "$LOG_DIR" && pwd)"
# Run inside each task: its own error file, then the command, whose exit
# status goes to $LOG_DIR/<rank>/exit_status: --kill-on-bad-exit ends the
# ranks still running when the first one exits with an error (or 85,
# preempted), and srun then reports their 143. (The shell waits for the
# command on SIGTERM / SIGUSR1, which reach the command too.)
# shellcheck disable=SC2016
PER_TASK='export TORCHELASTIC_ERROR_FILE="$0/$SLURM_PROCID/error.json"; mkdir -p "$0/$SLURM_PROCID"; trap : TERM USR1; "$@"; status=$?; echo "$status" >"$0/$SLURM_PROCID/exit_status"; exit "$status"'
# shellcheck disable=SC2206  # SRUN_ARGS is split on spaces, as always
SRUN=(srun -p "$PARTITION"
    --job-name="$JOB_NAME"
    ${GRES:+--gres="$GRES"}
    --ntasks="$GPUS"
    --ntasks-per-node="$GPUS_PER_NODE"
    --cpus-per-task="$CPUS_PER_TASK"
    --kill-on-bad-exit=1
    ${SRUN_ARGS}
    bash -c "$PER_TASK" "$LOG_DIR")

# The root-cause report of a failed srun (status $1), printed last and
# saved as failure_report.json in the work dir the ranks recorded (the
# scripts pass WORK_DIR on to them), else in WORK_DIR; a failure of the
# report itself does not change the script's status.
slurm_failure_report() {
  "$PYTHON" "$ROOT/tools/failure_report.py" "$LOG_DIR" --exit-code "$1" \
      --work-dir "$WORK_DIR" || true
}
