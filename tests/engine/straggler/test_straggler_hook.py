"""StragglerHook: 2 gloo ranks name the slow rank and its bound in
``rank_timing.json``.

The 2-rank runs are ``tools/train.py`` in 2 ranks forked from the test
process (``fork_dist_train``, as ``tools/dist_train.sh`` runs each rank);
the three run side by side in one module-scoped fixture:

* rank 1's samples load slowly (``num_workers=0``): ``slowest_rank: 1``,
  ``bound: 'input'`` and the ``num_workers`` that would feed its step;
* rank 1's forward is slow: ``bound: 'compute'``, and rank 0's compute
  does not contain its wait for rank 1 in DDP's all-reduce;
* no rank is slowed: ``bound: null``;

and in process:

* one process: the report is written, ``slowest_rank: null``, no group;
  the DataLoader's restart is not counted;
* argument checks.
"""
import json
import math
from pathlib import Path

import pytest
from mmengine.config import Config
from mmengine.runner import Runner

import projects.mmdet3d_plugin  # noqa: F401  registers the hook
from projects.mmdet3d_plugin.cli.runner_setup import isolate_runner
from projects.mmdet3d_plugin.engine.hooks import StragglerHook
from projects.mmdet3d_plugin.engine.straggler.report import summary_line

from tests.helpers import straggler_toys
from tests.helpers.train_tool import finish, fork_dist_train

#: Upper bound for the three runs together; reaching it is a failure.
DEADLINE = 300
#: Sleep per sample (input) and per forward (compute) on the slow rank.
LOAD_S, FORWARD_S = 0.04, 0.08
HOOK = dict(type='StragglerHook', interval=10)
SCENARIOS = dict(
    input=dict(slow_load=1),
    compute=dict(slow_forward=1),
    none=dict(),
)


@pytest.fixture(scope='module')
def reports(tmp_path_factory):
    """The three 2-rank runs, side by side: name -> (report, log)."""
    tmp = tmp_path_factory.mktemp('straggler')
    runs = {}
    for name, slow in SCENARIOS.items():
        config = straggler_toys.write_straggler_config(
            tmp / f'{name}.py', HOOK, max_iters=12, **slow)
        runs[name] = fork_dist_train(  # hook: the ranks' timing report
            config, tmp / name)
    outs = finish(runs, timeout=DEADLINE)
    results = {}
    for name, (out, code) in outs.items():
        assert code == 0, out[-5000:]
        [path] = (tmp / name).glob('*/rank_timing.json')
        results[name] = (json.loads(path.read_text()), out)
    return results


@pytest.mark.slow
def test_slow_loader_on_rank_1_is_input_bound(reports):
    report, out = reports['input']
    assert (report['slowest_rank'], report['bound']) == (1, 'input'), out
    assert report['world_size'] == 2
    assert report['iterations'] == [1, 10]
    fix = report['fix']
    assert fix['current_num_workers'] == 0
    # Without workers a batch's load time is rank 1's data wait itself, at
    # least the two samples' sleeps.
    slow = report['ranks'][1]
    assert fix['load_ms_per_batch'] == pytest.approx(slow['data_wait_ms'])
    assert fix['load_ms_per_sample'] >= LOAD_S * 1e3
    assert fix['step_ms'] == pytest.approx(
        slow['iter_ms'] - slow['data_wait_ms'], abs=1e-2)
    assert fix['num_workers_needed'] == math.ceil(
        fix['load_ms_per_batch'] / fix['step_ms']) >= 2
    assert f"num_workers={fix['num_workers_needed']}" in fix['config_line']
    assert any('/dev/shm' in h for h in fix['hints'])
    assert any('storage' in h for h in fix['hints'])
    # Rank 0 logs the table and the fix.
    flat = ' '.join(out.split())
    assert 'StragglerHook: rank 1 is input-bound over iterations 1-10' \
        in flat, out[-5000:]
    assert f"fix: num_workers 0 -> {fix['num_workers_needed']}" in flat


@pytest.mark.slow
def test_slow_forward_on_rank_1_is_compute_bound(reports):
    report, out = reports['compute']
    assert (report['slowest_rank'], report['bound']) == (1, 'compute'), out
    fast, slow = report['ranks']
    assert slow['compute_ms'] >= FORWARD_S * 1e3
    # Rank 0 lives the same iterations but its compute excludes the wait
    # for rank 1 in DDP's gradient all-reduce.
    assert fast['iter_ms'] >= FORWARD_S * 1e3
    assert fast['compute_ms'] < 0.5 * slow['compute_ms']
    assert not fast['compute_is_whole_step']
    assert report['fix']['others_compute_ms'] == fast['compute_ms']
    assert any('nvidia-smi' in h for h in report['fix']['hints'])
    assert 'StragglerHook: rank 1 is compute-bound' in ' '.join(out.split())


@pytest.mark.slow
def test_no_slowed_rank_no_straggler(reports):
    report, out = reports['none']
    assert report['slowest_rank'] is None, json.dumps(report['ranks'])
    assert report['bound'] is None and report['fix'] is None
    assert [fig['rank'] for fig in report['ranks']] == [0, 1]
    assert all(fig['measured_iters'] == 9 for fig in report['ranks'])
    assert 'is input-bound' not in out and 'is compute-bound' not in out
    assert summary_line(report).startswith(
        'StragglerHook: 2 ranks, data wait ')
    assert ': no straggler (input share ' in summary_line(report)


def test_one_process_writes_the_report_without_a_group(tmp_path):
    # 8 samples in batches of 2: the DataLoader restarts after 4
    # iterations (mmengine pauses 2 s there); 6 iterations, window 10.
    config = straggler_toys.write_straggler_config(
        tmp_path / 'one.py', dict(HOOK), max_iters=6, size=8)
    cfg = Config.fromfile(str(config))
    cfg.work_dir = str(tmp_path / 'work')
    cfg.launcher = 'none'
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(isolate_runner(cfg, 'straggler'))
    runner.train()
    [hook] = [h for h in runner.hooks if isinstance(h, StragglerHook)]
    assert hook._group is None
    report = json.loads(
        (Path(runner.log_dir) / 'rank_timing.json').read_text())
    assert (report['slowest_rank'], report['bound'], report['fix']) == (
        None, None, None)
    assert report['world_size'] == 1 and report['iterations'] == [1, 6]
    [fig] = report['ranks']
    # Not counted: the first iteration and the first after the restart.
    assert (fig['iters'], fig['measured_iters']) == (6, 4)
    assert fig['num_workers'] == 0 and fig['batch_size'] == 2
    assert report['hook_cost']['ms_per_iter'] > 0
    assert summary_line(report).startswith('StragglerHook: 1 rank, ')


@pytest.mark.parametrize('kwargs,match', [
    (dict(interval=0), 'interval must be an int >= 1'),
    (dict(interval=2.5), 'interval must be an int >= 1'),
    (dict(ratio=1.0), 'ratio must be a number > 1'),
    (dict(min_ms=-1), 'min_ms must be a number >= 0'),
    (dict(out_file=''), 'out_file must be a non-empty file name'),
    (dict(gather_timeout=0), 'gather_timeout must be a positive'),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=f'StragglerHook: {match}'):
        StragglerHook(**kwargs)
