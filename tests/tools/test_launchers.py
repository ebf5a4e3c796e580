"""Launchers end to end, real launches (marker ``launch``):
tools/dist_train.sh and dist_test.sh (CenterPoint) and a two-node run
(VoxelNet), as 2 CPU processes over gloo on the generated data;
dist_train.sh's ``DOCTOR=1`` stopping a launch; every other tool's one
``error:`` line on bad input, one launch per tool. The same bad input with
``--debug`` runs each tool's ``__main__`` in process: the error leaves it
for the interpreter to print. torchrun's restarts, its preemption exit
and ``--resume`` through the launchers:
``tests/engine/resume/test_exact_resume.py``; a hang ended by the
watchdog: ``tests/engine/watchdog/test_dist_watchdog_hook.py``; the failure
report: ``tests/failures/test_report.py``."""
import json
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.cli.parsers import DEBUG_ENV
from projects.mmdet3d_plugin.demo.quickstart import derived_config
from projects.mmdet3d_plugin.dist.ports import free_port
from projects.mmdet3d_plugin.synthetic.writer import MARKER
from tests.helpers.gpu import requires_no_cuda

REPO = Path(__file__).resolve().parents[2]
CENTERPOINT = REPO / 'configs/centerpoint/centerpoint_pillar_synthetic.py'
VOXELNET = REPO / 'configs/voxelnet/voxelnet_pillar_synthetic.py'
FAST = {
    'train_dataloader': dict(num_workers=0, persistent_workers=False,
                             batch_size=2),
    'val_cfg': None,
    'val_dataloader': None,
    'val_evaluator': None,
    'test_dataloader': dict(num_workers=0, persistent_workers=False),
    'default_hooks': dict(
        checkpoint=dict(interval=2), logger=dict(interval=1)),
}


def _run(cmd, timeout=300, **env):
    env = {**os.environ, 'PYTHON': sys.executable, 'PORT': str(free_port()),
           **env}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f'{" ".join(map(str, cmd))} exited {proc.returncode}\n'
        f'{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}')
    return proc


def _config(tmp_path, base, data_root, max_iters, **keys):
    overrides = dict(FAST, train_cfg=dict(max_iters=max_iters), **keys)
    return derived_config(tmp_path / f'{base.stem}_test.py', base, data_root,
                          overrides)


def _losses(work_dir):
    [run] = sorted(p for p in Path(work_dir).iterdir()
                   if p.is_dir() and p.name[:8].isdigit())
    scalars = (run / 'vis_data' / 'scalars.json').read_text().splitlines()
    return {rec['iter']: rec['loss']
            for rec in map(json.loads, scalars) if 'loss' in rec}


@pytest.fixture(scope='module')
def centerpoint_run(tmp_path_factory, nus_synthetic):
    """A 2-process CenterPoint run of 4 iterations; checkpoints at 2, 4.
    Its train loader keeps the generated config's worker (one, persistent,
    ignoring SIGTERM under ``PreemptionHook``), ended at exit."""
    tmp = tmp_path_factory.mktemp('centerpoint')
    config = _config(tmp, CENTERPOINT, nus_synthetic, 4,
                     train_dataloader=dict(batch_size=2))
    work_dir = tmp / 'work'
    # launcher: dist_train.sh, 2 CPU processes over gloo
    proc = _run(['bash', 'tools/dist_train.sh', config, '2',
                 '--work-dir', work_dir])
    return config, work_dir, proc


@pytest.mark.slow
@pytest.mark.launch
def test_dist_train_centerpoint_two_cpu_processes(centerpoint_run):
    config, work_dir, proc = centerpoint_run
    log = proc.stdout + proc.stderr
    assert 'initialised a gloo process group on CPU: rank 0 of 2' in log
    assert (work_dir / 'iter_4.pth').is_file()
    losses = _losses(work_dir)
    assert sorted(losses) == [1, 2, 3, 4]
    assert all(v == v and v < 1e4 for v in losses.values())  # finite
    # A run that succeeded ends quietly: its workers, ended at exit, are
    # no loader error.
    assert 'Traceback' not in log and 'killed by signal' not in log, \
        log[-5000:]


@pytest.mark.launch
def test_dist_test_evaluates_checkpoint(centerpoint_run):
    config, work_dir, _ = centerpoint_run
    # launcher: dist_test.sh on the checkpoint dist_train.sh wrote
    proc = _run(['bash', 'tools/dist_test.sh', config,
                 work_dir / 'iter_4.pth', '2', '--work-dir',
                 work_dir / 'test'])
    log = proc.stdout + proc.stderr
    assert 'pred_instances_3d_NuScenes/mAP' in log
    assert 'pred_instances_3d_NuScenes/NDS' in log


@pytest.mark.slow
@pytest.mark.launch
def test_two_nodes_on_one_machine(tmp_path, nus_synthetic):
    """NNODES=2: two torchrun agents, one process each, rendezvous on
    127.0.0.1 and train the VoxelNet config together."""
    config = _config(tmp_path, VOXELNET, nus_synthetic, 2)
    port = str(free_port())
    env = {**os.environ, 'PYTHON': sys.executable, 'NNODES': '2',
           'MASTER_ADDR': '127.0.0.1', 'PORT': port}
    nodes = [
        subprocess.Popen(  # launcher: a torchrun agent per node
            ['bash', 'tools/dist_train.sh', str(config), '1', '--work-dir',
             str(tmp_path / 'work')],
            cwd=REPO, env={**env, 'NODE_RANK': str(rank)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    for rank, (node, out) in enumerate(zip(nodes, outputs)):
        assert node.returncode == 0, f'node {rank}:\n{out[-5000:]}'
    # Rank 0 (node 0) logs for both: one process per node, world size 2.
    assert 'rank 0 of 2' in outputs[0]
    assert (tmp_path / 'work' / 'iter_2.pth').is_file()
    assert sorted(_losses(tmp_path / 'work')) == [1, 2]


@requires_no_cuda
@pytest.mark.launch
def test_doctor_checks_the_train_flags_before_launching(tmp_path,
                                                        nus_synthetic):
    # Without CUDA, --amp fp16 cannot train: the doctor, given the same
    # flags as train.py, stops the launch before torchrun starts.
    config = _config(tmp_path, CENTERPOINT, nus_synthetic, 2)
    work_dir = tmp_path / 'work'
    env = {**os.environ, 'PYTHON': sys.executable, 'DOCTOR': '1',
           'PORT': str(free_port())}
    proc = subprocess.run(  # launcher: DOCTOR=1 runs tools/doctor.py first
        ['bash', 'tools/dist_train.sh', config, '2', '--work-dir', work_dir,
         '--amp', 'fp16'],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'tools/doctor.py found a failure' in proc.stderr
    [amp] = [line for line in proc.stdout.splitlines()
             if line.split()[1:2] == ['optim.amp']]
    assert amp.startswith('[FAIL]') and 'CUDA GPU' in amp, proc.stdout
    assert not work_dir.exists()


# -- bad input: one error line, or the traceback with --debug --------------

# tool, its arguments, the exception, what its line names ({tmp}: tmp_path).
BAD_INPUTS = [
    ('check_pickle', ['{tmp}/no_such_config.py'], 'FileNotFoundError',
     '{tmp}/no_such_config.py'),
    ('create_data', ['nuscenes', '--root-path', '{tmp}/no_such_root'],
     'FileNotFoundError', '{tmp}/no_such_root'),
    ('find_unused_params', ['{tmp}/no_such_config.py'], 'FileNotFoundError',
     '{tmp}/no_such_config.py'),
    ('migrate_config', ['{tmp}/no_such_config.py', '{tmp}/out.py'],
     'FileNotFoundError', '{tmp}/no_such_config.py'),
    ('migrate_checkpoint', ['{tmp}/no_such.pth', '{tmp}/out.py'],
     'FileNotFoundError', '{tmp}/no_such.pth'),
    ('quickstart', ['--work-dir', '{tmp}/work', '--data-root',
                    '{tmp}/seed1_root'], 'ValueError',
     '{tmp}/seed1_root holds a dataset generated with seed=1'),
    ('create_synthetic_nuscenes', ['--out-dir', '{tmp}/syn', '--version',
                                   'v9.9'], 'ValueError',
     "version must be one of ('v1.0-mini', 'v1.0-trainval', 'v1.0-test') "
     "(the devkit's splits of that version select the generated scenes); "
     "got 'v9.9'"),
]


def _seed1_root(tmp_path):
    """quickstart's bad data root: a dataset generated with seed 1, not its
    0."""
    (tmp_path / 'seed1_root' / 'v1.0-mini').mkdir(parents=True)
    (tmp_path / 'seed1_root' / MARKER).write_text(json.dumps(dict(seed=1)))


@pytest.mark.launch
@pytest.mark.parametrize('tool,args,exc_type,named', BAD_INPUTS,
                         ids=[case[0] for case in BAD_INPUTS])
def test_tool_bad_input_prints_one_error_line(tool, args, exc_type, named,
                                              tmp_path):
    _seed1_root(tmp_path)
    named = named.format(tmp=tmp_path)
    cmd = [sys.executable, f'tools/{tool}.py',
           *(arg.format(tmp=tmp_path) for arg in args)]
    env = {k: v for k, v in os.environ.items() if k != DEBUG_ENV}
    # tool: its bad input, as users run it
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    err = proc.stderr
    errors = [line for line in err.splitlines() if line.startswith('error: ')]
    assert proc.returncode == 1, err[-3000:]
    assert 'Traceback' not in err, err[-3000:]
    assert len(errors) == 1 and named in errors[0], err[-3000:]
    assert f'--debug or {DEBUG_ENV}=1 shows the traceback' in err
    assert not (tmp_path / 'out.py').exists()  # migrate_config wrote nothing


@pytest.mark.parametrize('tool,args,exc_type,named', BAD_INPUTS,
                         ids=[case[0] for case in BAD_INPUTS])
def test_tool_bad_input_with_debug_keeps_the_traceback(
        tool, args, exc_type, named, tmp_path, monkeypatch, capsys):
    """The tool's ``__main__`` in process (its launch is the test above):
    with ``--debug`` the error leaves it, so the interpreter prints its
    traceback, ending with the line checked here; no ``error:`` line."""
    _seed1_root(tmp_path)
    named = named.format(tmp=tmp_path)
    script = str(REPO / 'tools' / f'{tool}.py')
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, 'path', list(sys.path))  # the tool adds ROOT
    monkeypatch.setattr(sys, 'argv', [
        script, *(arg.format(tmp=tmp_path) for arg in args), '--debug'])
    with pytest.raises(Exception) as raised:
        runpy.run_path(script, run_name='__main__')
    last = traceback.format_exception_only(raised.value)[-1].strip()
    assert last.startswith(f'{exc_type}: ') and named in last, last
    assert 'error: ' not in capsys.readouterr().err
    assert not (tmp_path / 'out.py').exists()  # migrate_config wrote nothing
