"""DistWatchdogHook and a long evaluation: judged against the metric's
``dist_wait_timeout``, not against the watchdog's ``timeout``.

Two runs of ``tools/train.py`` in 2 gloo ranks forked from the test process
(``fork_dist_train``, each rank with its torch elastic error file,
``tests/helpers/train_tool.py``), side by side: the small synthetic
CenterPoint trains 2 iterations, then validates the 20 generated val frames
with ``SlowSafeNuScenesMetric`` (``metric_wait_runner.py``), whose
``compute_metrics`` first sleeps :data:`SLEEP` s, longer than the
watchdog's ``timeout`` of :data:`TIMEOUT` s and a round of it (5 s), by
which a watchdog without phases would have ended the run, with no
iteration finishing on any rank meanwhile (the timeout stays 20 s: the
first training iteration of two ranks took 15 s in a loaded full suite):

* with the default ``dist_wait_timeout`` (4 h) the run ends with status 0
  and the metrics: rank 0's evaluation is a declared phase, rank 1 waits in
  it (before the watchdog knew phases, it ended this run as a hang);
* with ``dist_wait_timeout=24`` the watchdog ends the run (exit status 75
  on both ranks) just before the wait would time out; the ranks' log
  lines and error files, ``hang_report.txt`` and the failure report built
  from those error files in process (``report_failed_run``, what
  ``tools/dist_run.py`` prints after torchrun) name rank 0's evaluation.
"""
import json
import textwrap
from pathlib import Path

import pytest

from projects.mmdet3d_plugin.constants import (HANG_EXIT_CODE,
                                               HANG_MESSAGE_PREFIX,
                                               HANG_REPORT_NAME)
from projects.mmdet3d_plugin.failures.report import report_failed_run

# Mostly waits (timeouts, sleeps): started first, beside CPU-bound modules.
pytestmark = pytest.mark.waits


REPO = Path(__file__).resolve().parents[3]
from tests.helpers.train_tool import (error_files,  # noqa: E402
                                      finish, fork_dist_train)

CONFIG = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
TIMEOUT = 20  # DistWatchdogHook's timeout, seconds
SLEEP = 32  # what compute_metrics sleeps first, seconds
DIST_WAIT = 24  # the second run's dist_wait_timeout, seconds
#: Upper bound for a run that must end by itself; reaching it means a hang.
HANG = 600
METRIC = 'NuScenes metric/pred_instances_3d_NuScenes/NDS'
PHASE = ('rank 0 stuck in evaluation (rank 0 computes '
         'SlowSafeNuScenesMetric.compute_metrics)')
OVERDUE = f'about to outlast its dist_wait_timeout of {DIST_WAIT} s'


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


@pytest.fixture(scope='module')
def runs(tmp_path_factory, nus_synthetic):
    """'ok' and 'overdue' -> dict(codes, out, work, errors): both runs,
    side by side (most of their time is the metric's sleep)."""
    tmp = tmp_path_factory.mktemp('watchdog_eval')
    forked = {}
    for name, wait in (('ok', None), ('overdue', DIST_WAIT)):
        config = _write_config(tmp / f'{name}.py', wait)
        forked[name] = fork_dist_train(  # hook: a declared phase
            config, tmp / name, '--data-root', nus_synthetic,
            errors=tmp / f'{name}_errors')
    done = finish(forked, timeout=HANG)
    results = {}
    for name, (out, _) in done.items():
        # The whole output, for a failure's message to point at.
        (tmp / f'{name}.out').write_text(out)
        results[name] = dict(codes=forked[name].returncodes, out=out,
                             work=tmp / name, errors=tmp / f'{name}_errors',
                             log=tmp / f'{name}.out')
    return results


@pytest.mark.slow
def test_long_evaluation_within_dist_wait_timeout_is_no_hang(runs):
    run = runs['ok']
    out = run['out']
    assert run['codes'] == [0, 0], f'{run["log"]}:\n{out[-3000:]}'
    assert HANG_MESSAGE_PREFIX not in out, out[-6000:]
    assert f'{METRIC}:' in out, out[-6000:]
    assert not list(run['work'].glob(f'*/{HANG_REPORT_NAME}'))
    assert error_files(run['errors']) == {}


@pytest.mark.slow
def test_evaluation_outlasting_dist_wait_timeout_is_ended_as_a_hang(runs):
    run = runs['overdue']
    out = run['out']
    assert run['codes'] == [HANG_EXIT_CODE] * 2, \
        f'{run["log"]}:\n{out[-3000:]}'
    assert f'{METRIC}:' not in out
    # Each rank logs why it ends, naming the phase.
    flat = ' '.join(out.split())
    for rank in (0, 1):
        assert f'Ending rank {rank} with exit status {HANG_EXIT_CODE}.' \
            in flat, out[-6000:]
    assert f'{HANG_MESSAGE_PREFIX}: {PHASE} at ' in flat, out[-6000:]
    assert OVERDUE in flat, out[-6000:]
    # Each rank's error file: the message the launcher prints.
    files = error_files(run['errors'])
    assert sorted(files) == [0, 1], out[-6000:]
    for data in files.values():
        message = data['message']['message']
        assert message.startswith(
            f'{HANG_MESSAGE_PREFIX}: {PHASE} at '
            'tests/helpers/metric_wait_runner.py:'), message
        assert OVERDUE in message, message
        assert data['message']['extraInfo']['stuck_ranks'] == [0]
    # The failure report built from them: the cause, the stuck rank, the
    # phase (as tools/dist_run.py prints it after torchrun).
    text, path = report_failed_run(str(run['errors']), 1, str(run['work']))
    tail = ' '.join(text.split())
    assert 'Why the run failed' in tail, text
    assert PHASE in tail, tail
    assert OVERDUE in tail, tail
    report = json.loads(Path(path).read_text())
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
