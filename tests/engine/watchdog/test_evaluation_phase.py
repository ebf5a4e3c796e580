"""DistWatchdogHook and a long evaluation: judged against the metric's
``dist_wait_timeout``, not against the watchdog's ``timeout``.

Two 2-rank gloo runs of ``tools/dist_train.sh`` (torchrun), side by side:
the small synthetic CenterPoint trains 2 iterations, then validates the 20
generated val frames with ``SlowSafeNuScenesMetric``
(``metric_wait_runner.py``), whose ``compute_metrics`` first sleeps
:data:`SLEEP` s, more than twice the watchdog's ``timeout`` of
:data:`TIMEOUT` s, with no iteration finishing on any rank meanwhile:

* with the default ``dist_wait_timeout`` (4 h) the run ends with status 0
  and the metrics: rank 0's evaluation is a declared phase, rank 1 waits in
  it (before the watchdog knew phases, it ended this run as a hang);
* with ``dist_wait_timeout=30`` the watchdog ends the run (exit status 75
  on both ranks) just before the wait would time out, and the launcher's
  report, ``failure_report.json`` and ``hang_report.txt`` name rank 0's
  evaluation.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.constants import (FAILURE_REPORT_NAME,
                                               HANG_EXIT_CODE,
                                               HANG_MESSAGE_PREFIX,
                                               HANG_REPORT_NAME)
from projects.mmdet3d_plugin.dist.ports import free_port

REPO = Path(__file__).resolve().parents[3]
HELPERS = REPO / 'tests' / 'helpers'
from tests.helpers.dist_env import wait_or_kill  # noqa: E402

CONFIG = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
TIMEOUT = 20  # DistWatchdogHook's timeout, seconds
SLEEP = 45  # what compute_metrics sleeps first, seconds
DIST_WAIT = 30  # the second run's dist_wait_timeout, seconds
#: Upper bound for a run that must end by itself; reaching it means a hang.
HANG = 600
METRIC = 'NuScenes metric/pred_instances_3d_NuScenes/NDS'
PHASE = ('rank 0 stuck in evaluation (rank 0 computes '
         'SlowSafeNuScenesMetric.compute_metrics)')


def _write_config(path: Path, dist_wait_timeout=None) -> Path:
    wait = '' if dist_wait_timeout is None else \
        f', dist_wait_timeout={dist_wait_timeout}'
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(CONFIG)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin',
                     'tests.helpers.metric_wait_runner'],
            allow_failed_imports=False)
        # Every box of the untrained model, but few per frame.
        model = dict(
            pts_bbox_head=dict(bbox_coder=dict(score_threshold=0.0)),
            test_cfg=dict(pts=dict(
                score_threshold=0.0, pre_max_size=100, post_max_size=5)))
        train_cfg = dict(
            type='IterBasedTrainLoop', max_iters=2, val_interval=2)
        param_scheduler = []
        train_dataloader = dict(num_workers=0, persistent_workers=False)
        val_dataloader = dict(num_workers=0, persistent_workers=False)
        val_evaluator = dict(
            type='SlowSafeNuScenesMetric', sleep={SLEEP}{wait})
        default_hooks = dict(
            logger=dict(type='LoggerHook', interval=1),
            checkpoint=dict(type='CheckpointHook', by_epoch=False,
                            interval=2))
        custom_hooks = [dict(type='DistWatchdogHook', timeout={TIMEOUT})]
        env_cfg = dict(dist_cfg=dict(backend='gloo'))
        randomness = dict(seed=0)
        """))
    return path


def _launch(config: Path, work: Path, data_root: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               PORT=str(free_port()), OMP_NUM_THREADS='1')
    for name in ('MMDET3D_PLUGIN_DEBUG', 'TORCHRUN_LOG_DIR'):
        env.pop(name, None)
    return subprocess.Popen(
        ['bash', str(REPO / 'tools' / 'dist_train.sh'), str(config), '2',
         '--work-dir', str(work), '--data-root', str(data_root)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)


@pytest.fixture(scope='module')
def runs(tmp_path_factory, nus_synthetic):
    """'ok' and 'overdue' -> dict(rc, out, work): both runs, side by side
    (most of their time is the metric's sleep)."""
    tmp = tmp_path_factory.mktemp('watchdog_eval')
    procs = {}
    for name, wait in (('ok', None), ('overdue', DIST_WAIT)):
        config = _write_config(tmp / f'{name}.py', wait)
        procs[name] = (_launch(config, tmp / name, nus_synthetic),
                       tmp / name)
    results = {}
    for name, (proc, work) in procs.items():
        out = wait_or_kill(proc, HANG, f'the {name!r} run did not end')
        # The whole output, for a failure's message to point at.
        (tmp / f'{name}.out').write_text(out)
        results[name] = dict(rc=proc.returncode, out=out, work=work,
                             log=tmp / f'{name}.out')
    return results


@pytest.mark.slow
def test_long_evaluation_within_dist_wait_timeout_is_no_hang(runs):
    run = runs['ok']
    out = run['out']
    assert run['rc'] == 0, f'{run["log"]}:\n{out[-3000:]}'
    assert HANG_MESSAGE_PREFIX not in out, out[-6000:]
    assert f'{METRIC}:' in out, out[-6000:]
    assert not list(run['work'].glob(f'*/{HANG_REPORT_NAME}'))


@pytest.mark.slow
def test_evaluation_outlasting_dist_wait_timeout_is_ended_as_a_hang(runs):
    run = runs['overdue']
    out = run['out']
    assert run['rc'] != 0, f'{run["log"]}:\n{out[-3000:]}'
    assert out.count(f'exitcode  : {HANG_EXIT_CODE}') == 2, out[-6000:]
    assert f'{METRIC}:' not in out
    # The launcher's last lines: the root-cause report names the phase.
    tail = ' '.join('\n'.join(out.splitlines()[-40:]).split())
    assert 'Why the run failed' in tail, out[-6000:]
    assert PHASE in tail, tail
    assert f'about to outlast its dist_wait_timeout of {DIST_WAIT} s' in \
        tail, tail
    report = json.loads((run['work'] / FAILURE_REPORT_NAME).read_text())
    assert report['cause']['key'] == 'hang', report
    assert report['stuck_ranks'] == [0], report
    [error] = report['errors']
    assert error['ranks'] == [0, 1], report
    assert error['error'].startswith(
        f'{HANG_MESSAGE_PREFIX}: {PHASE} at '
        'tests/helpers/metric_wait_runner.py:'), error
    assert 'Rank 1 waits in a collective' in error['error'], error
    assert 'in evaluation (waits for rank 0 to compute ' \
        'SlowSafeNuScenesMetric.compute_metrics)' in error['error'], error
    text = Path(report['hang_report']).read_text()
    assert 'declared phases:' in text, text
    assert ('rank 0 in evaluation (rank 0 computes '
            'SlowSafeNuScenesMetric.compute_metrics): ') in text, text
