"""``tools/slurm_train.sh`` as the body of real sbatch jobs, on the Slurm
the ``slurm`` fixture starts (slurmctld and two slurmd on this machine):
1 task on each of two nodes, and 2 tasks on one node preempted in the
middle that requeue, resume and end with the losses of the uninterrupted
two-node run; ``tools/slurm_test.sh`` failing from a login node, its
root-cause report in its work dir.

The training is ``fault_helpers``' toy (``tests/helpers/slurm_toy.py``), 2
CPU processes over gloo. ``scontrol show job`` of each job is printed
(``pytest -s`` shows it). The jobs are real launches of the scripts
(marker ``launch``); what the scripts hold is read without one.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.constants import (FAILURE_REPORT_NAME,
                                               PREEMPTED_EXIT_CODE)
from projects.mmdet3d_plugin.dist.ports import free_port
from tests.helpers.slurm_cluster import PARTITION, SLURM_INSTALL, SlurmCluster
from tests.helpers.slurm_toy import write_paced_config

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / 'tools' / 'slurm_train.sh'
TEST_SCRIPT = REPO / 'tools' / 'slurm_test.sh'
MAX_ITERS = 12


def _submit(cluster, tmp_path, args, **env) -> str:
    """sbatch in ``tmp_path``; the job's output in ``tmp_path/job.out``.
    ``env``: for the job's processes (sbatch exports the environment)."""
    env = {'PYTHON': sys.executable, 'MASTER_PORT': str(free_port()),
           'OMP_NUM_THREADS': '1', 'PYTHONPATH': str(REPO), **env}
    proc = cluster.run(['sbatch', '--parsable', '-p', PARTITION,
                        '--output', str(tmp_path / 'job.out'),
                        '--open-mode=append', *map(str, args)],
                       env=env, cwd=tmp_path)
    return proc.stdout.strip().split(';')[0]


def _finish(cluster, job_id, tmp_path, timeout=180) -> dict:
    start = time.monotonic()
    try:
        info = cluster.wait_job(job_id, timeout=timeout)
    except TimeoutError as err:
        log = tmp_path / 'job.out'
        tail = log.read_text()[-6000:] if log.is_file() else '(no job.out)'
        raise TimeoutError(f'{err}\njob.out, last lines:\n{tail}') from None
    print(f'job {job_id} ended {time.monotonic() - start:.1f} s later:\n'
          f'{cluster.show_job(job_id)}')
    log = (tmp_path / 'job.out').read_text()
    assert info['JobState'] == 'COMPLETED', log[-6000:]
    return info


def _losses(work_dir: Path) -> dict:
    """``{iter: loss}`` over every run folder of a work dir."""
    losses = {}
    for run in sorted(p for p in work_dir.iterdir()
                      if p.is_dir() and p.name[:8].isdigit()):
        for line in (run / 'vis_data' / 'scalars.json').read_text(
        ).splitlines():
            rec = json.loads(line)
            if 'loss' in rec:
                assert rec['iter'] not in losses, f'iter {rec["iter"]} twice'
                losses[rec['iter']] = rec['loss']
    return losses


@pytest.fixture(scope='module')
def reference(slurm, tmp_path_factory):
    """``sbatch tools/slurm_train.sh`` (the script itself, run from
    slurmd's spool copy), one task on each of the two nodes (GPUS,
    GPUS_PER_NODE and CPUS_PER_TASK unset: the job's sizes),
    uninterrupted; ``{iter: loss}``."""
    tmp = tmp_path_factory.mktemp('reference')
    config = write_paced_config(tmp / 'toy.py', MAX_ITERS)
    job = _submit(slurm, tmp, [
        '--nodes=2', '--ntasks-per-node=1', '--cpus-per-task=1', SCRIPT,
        PARTITION, 'toy', config, tmp / 'work'])
    info = _finish(slurm, job, tmp)
    return info, tmp, _losses(tmp / 'work')


@pytest.mark.launch
def test_sbatch_two_nodes_trains(reference):
    info, tmp, losses = reference
    log = (tmp / 'job.out').read_text()
    assert info['ExitCode'] == '0:0' and info['Restarts'] == '0'
    assert info['NodeList'] == 'node[1-2]' and info['NumNodes'] == '2'
    assert info['NumTasks'] == '2'
    assert 'initialised a gloo process group on CPU: rank 0 of 2' in log
    assert sorted(losses) == list(range(1, MAX_ITERS + 1))
    assert (tmp / 'work' / f'iter_{MAX_ITERS}.pth').is_file()


#: The sbatch script of README's Slurm section, for the toy: exec, so that
#: the batch shell that --signal=B:USR1 signals is slurm_train.sh's.
SBATCH_SCRIPT = """\
#!/usr/bin/env bash
#SBATCH --job-name=toy
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
exec {script} {partition} toy {config} {work}
"""


#: Stand-in for ``python``: tools/train.py's side of the preemption
#: contract, without the training. Each task runs 0.2 s "iterations",
#: printing them, 60 of them in the first attempt, 3 in a requeued one; on
#: SIGTERM or SIGUSR1 it finishes its iteration and exits 85, as
#: PreemptionHook does.
STANDIN = r'''#!/usr/bin/env bash
echo "task $SLURM_PROCID: attempt ${SLURM_RESTART_COUNT:-0}"
trap 'echo "task $SLURM_PROCID: got SIGTERM"; stop=1' TERM
trap 'echo "task $SLURM_PROCID: got SIGUSR1"; stop=1' USR1
iters=60
[ "${SLURM_RESTART_COUNT:-0}" -gt 0 ] && iters=3
for ((i = 1; i <= iters; i++)); do
  sleep 0.2
  echo "task $SLURM_PROCID: iteration $i"
  [ -n "${stop:-}" ] && exit 85
done
echo "task $SLURM_PROCID: done"
'''


@pytest.mark.launch
@pytest.mark.parametrize('preempt', ['requeue', 'usr1'])
def test_script_requeues_on_the_preempted_status(slurm, tmp_path, preempt):
    """The script's part, with a stand-in for train.py's: ``requeue``:
    ``scontrol requeue`` (Slurm sends SIGTERM to the batch shell and to
    every task, and requeues); ``usr1``: what ``--signal=B:USR1@120``
    sends (the script forwards it to srun, and requeues on status 85)."""
    standin = tmp_path / 'python'
    standin.write_text(STANDIN)
    standin.chmod(0o755)
    batch = tmp_path / 'train.sbatch'
    batch.write_text(SBATCH_SCRIPT.format(
        script=SCRIPT, partition=PARTITION, config='toy.py',
        work=tmp_path / 'work'))
    job = _submit(slurm, tmp_path, [batch], PYTHON=str(standin))
    out = tmp_path / 'job.out'
    deadline = time.monotonic() + 120
    while not out.exists() or 'task 1: iteration 3' not in out.read_text():
        assert time.monotonic() < deadline, slurm.show_job(job)
        time.sleep(0.2)
    if preempt == 'requeue':
        slurm.run(['scontrol', 'requeue', job])
    else:
        slurm.run(['scancel', '--batch', '--signal=USR1', job])
    info = _finish(slurm, job, tmp_path)
    log = out.read_text()
    assert info['Restarts'] == '1' and info['ExitCode'] == '0:0', log
    signame = 'TERM' if preempt == 'requeue' else 'USR1'
    for rank in (0, 1):
        assert f'task {rank}: got SIG{signame}' in log, log
        assert f'task {rank}: attempt 1' in log and f'task {rank}: done' in log
    if preempt == 'requeue':
        assert 'slurm_train.sh: preempted by SIGTERM; Slurm ends job' in log
    else:
        assert f'slurm_train.sh: preempted (USR1); requeuing job {job}' in log


@pytest.mark.launch
def test_preempted_job_requeues_and_resumes(slurm, reference, tmp_path):
    """2 tasks on one node, sent what ``--signal=B:USR1@120`` sends before
    the time limit: the script forwards it to srun, the tasks save and exit
    85, the script requeues the job, and the requeued job resumes onto the
    trajectory of the uninterrupted two-node run. (``scontrol requeue``,
    Slurm's SIGTERM to the batch shell and every task, is the stand-in
    test's above; PreemptionHook's SIGTERM: the exact-resume tests.)"""
    # Preempted in the first epoch (6 iterations), resumed into the second.
    config = write_paced_config(tmp_path / 'toy.py', MAX_ITERS, seconds=1.0)
    work = tmp_path / 'work'
    batch = tmp_path / 'train.sbatch'
    batch.write_text(SBATCH_SCRIPT.format(
        script=SCRIPT, partition=PARTITION, config=config, work=work))
    job = _submit(slurm, tmp_path, [batch])
    deadline = time.monotonic() + 180
    while not (work / 'iter_4.pth').is_file():
        assert time.monotonic() < deadline, slurm.show_job(job)
        time.sleep(0.2)
    slurm.run(['scancel', '--batch', '--signal=USR1', job])
    # The requeued attempt starts 2 training processes again: on a loaded
    # 2-core CI machine (4 test workers) that took over 144 s once.
    info = _finish(slurm, job, tmp_path, timeout=420)
    log = (tmp_path / 'job.out').read_text()
    assert info['Restarts'] == '1' and info['ExitCode'] == '0:0', log[-6000:]
    assert info['Requeue'] == '1'
    assert 'slurm_train.sh: preempted' in log, log[-12000:]
    runs = [p for p in work.iterdir() if p.is_dir() and p.name[:8].isdigit()]
    assert len(runs) == 2, log[-6000:]
    # Resumed where it stopped (nothing twice, nothing missing), and on the
    # uninterrupted run's trajectory.
    losses = _losses(work)
    assert sorted(losses) == list(range(1, MAX_ITERS + 1)), log[-6000:]
    assert losses == reference[2], f'{losses}\n!=\n{reference[2]}'


#: A test config of the toy (``fault_helpers``' model and data).
TEST_CONFIG = """\
custom_imports = dict(
    imports=['projects.mmdet3d_plugin', 'tests.helpers.fault_helpers'],
    allow_failed_imports=False)
default_scope = 'mmdet3d'
model = dict(type='FaultToyModel')
test_dataloader = dict(
    batch_size=2, num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type='FaultToyDataset', size=8))
test_cfg = dict(type='TestLoop')
test_evaluator = dict(type='DumpResults', out_file_path='results.pkl')
env_cfg = dict(dist_cfg=dict(backend='gloo'))
"""


@pytest.mark.launch
@pytest.mark.slow
@pytest.mark.parametrize('work_dir', ['default', 'given'])
def test_slurm_test_failure_report_in_its_work_dir(slurm, tmp_path,
                                                   work_dir):
    """From a "login node" (srun makes a job of its own), 2 tasks whose
    checkpoint does not exist: the report is printed last and saved in the
    work dir, test.py's ``--work-dir`` or else ``work_dirs/<config name>``
    of the current folder, where the tasks' error files are."""
    config = tmp_path / 'toy_test.py'
    config.write_text(TEST_CONFIG)
    args = []
    if work_dir == 'default':
        work = tmp_path / 'work_dirs' / 'toy_test'
    else:
        work = tmp_path / 'given'
        args = ['--work-dir', str(work)]
    env = dict(slurm.env, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               MASTER_PORT=str(free_port()), OMP_NUM_THREADS='1', GPUS='2',
               GPUS_PER_NODE='2', CPUS_PER_TASK='1', GRES='')
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    proc = subprocess.run(
        ['bash', str(TEST_SCRIPT), PARTITION, 'test', str(config),
         str(tmp_path / 'missing.pth'), *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode != 0, out[-6000:]
    tail = '\n'.join(out.splitlines()[-40:])
    assert 'Why the run failed' in tail, out[-6000:]
    assert 'does not exist' in tail, out[-6000:]
    report = json.loads((work / FAILURE_REPORT_NAME).read_text())
    assert report['launcher_exit_code'] == proc.returncode, report
    assert 'missing.pth' in json.dumps(report['first_failure']), report
    # The tasks' error files: under the work dir, one folder per rank.
    assert Path(report['log_dir']).parent == work / 'error_files'
    assert sorted(p.parent.name for p in (work / 'error_files').glob(
        '*/*/exit_status')) == ['0', '1']
    assert not (tmp_path / 'work_dirs' / 'slurm_error_files').exists()


def test_slurm_scripts_share_their_settings():
    """Both scripts source tools/slurm_env.sh and set none of its
    settings themselves."""
    env = (REPO / 'tools' / 'slurm_env.sh').read_text()
    for name in ('GPUS=', 'CPUS_PER_TASK=', 'SRUN_ARGS=', 'LOG_DIR=',
                 'MASTER_PORT=', 'failure_report.py'):
        assert name in env
    for script in (SCRIPT, TEST_SCRIPT):
        text = script.read_text()
        assert 'source "$TOOLS/slurm_env.sh"' in text
        body = [line for line in text.splitlines()
                if not line.lstrip().startswith('#')]
        for name in ('GPUS=', 'CPUS_PER_TASK=', 'SRUN_ARGS=', 'LOG_DIR=',
                     'failure_report.py', 'srun '):
            assert not any(name in line for line in body), (script, name)


def test_script_knows_the_preempted_status():
    assert f'PREEMPTED={PREEMPTED_EXIT_CODE} ' in SCRIPT.read_text()
    assert os.access(SCRIPT, os.X_OK)


def test_cluster_without_slurm_names_the_install_command(tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(RuntimeError, match=f'slurmctld, slurmd, sinfo, .* '
                       f'not found on PATH; install Slurm with '
                       f'`{SLURM_INSTALL}`'):
        SlurmCluster(tmp_path)
