#!/usr/bin/env bash
# What the test suite needs beyond .venv/: Slurm's daemons and clients for
# the Slurm tests (tests/helpers/slurm_cluster.py starts a Slurm of their
# own). `make test` runs this first; it installs them when missing, as root
# with apt-get (Debian / Ubuntu), and otherwise says the one command to run
# (the Slurm tests then fail with the same command).
set -euo pipefail

missing=()
for program in slurmctld slurmd sinfo sbatch srun scontrol scancel; do
  command -v "$program" >/dev/null || missing+=("$program")
done
[ ${#missing[@]} -eq 0 ] && exit 0

INSTALL='apt-get install -y slurmctld slurmd slurm-client'
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "install_test_deps.sh: ${missing[*]} not on PATH: $INSTALL" >&2
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $INSTALL >/dev/null
else
  echo "install_test_deps.sh: ${missing[*]} not on PATH; the Slurm tests" \
      "will fail until you run (as root): $INSTALL" >&2
fi
