#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [GRES=gpu:8] [SRUN_ARGS=...] \
#   tools/slurm_test.sh PARTITION JOB_NAME CONFIG CHECKPOINT [test.py args...]
#
# The resources, the environment and the failure report are
# tools/slurm_env.sh's, shared with tools/slurm_train.sh. The work dir is
# test.py's --work-dir DIR among the args, else ./work_dirs/<config name>
# (tools/test.py's default for a config without a work_dir of its own); it
# is passed on to test.py, the tasks' error files go under it, and after a
# failure the root-cause report is printed last and saved as
# <work dir>/failure_report.json. The script exits with srun's status.
set -euxo pipefail

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
CHECKPOINT=$4
WORK_DIR=""
for ((i = 5; i <= $#; i++)); do
  ARG=${!i}
  case "$ARG" in
    --work-dir=*) WORK_DIR=${ARG#--work-dir=} ;;
    --work-dir) j=$((i + 1)); WORK_DIR=${!j:-} ;;
  esac
done
if [ -z "$WORK_DIR" ]; then
  CONFIG_NAME=$(basename "$CONFIG")
  WORK_DIR=work_dirs/${CONFIG_NAME%.*}
fi
# The settings both Slurm scripts share: tools/slurm_env.sh. `sbatch
# tools/slurm_test.sh ...` runs a copy of this script (slurmd's
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
TEST=("$PYTHON" -u "$ROOT/tools/test.py" "$CONFIG" "$CHECKPOINT"
    --work-dir="$WORK_DIR" --launcher=slurm "${@:5}")

set +e
"${SRUN[@]}" "${TEST[@]}"
STATUS=$?
set +x
set -e
if [ "$STATUS" -ne 0 ]; then
  slurm_failure_report "$STATUS"
fi
exit "$STATUS"
