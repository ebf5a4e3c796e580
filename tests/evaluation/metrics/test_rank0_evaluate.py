"""Rank0EvaluateMixin: an evaluation longer than the job's collective timeout.

Two gloo ranks forked from the test process (``train_tool.fork_call``
running ``tests/helpers/metric_wait_runner.py``'s ``validate_ranks``: the
metric and the evaluation loop are the subject, not a launcher) validate
the small synthetic CenterPoint with ``env_cfg.dist_cfg.timeout`` of a few
seconds and a metric that sleeps longer than that before computing:
``SafeNuScenesMetric`` finishes with the metrics of a one-process run,
mmdet3d's stock ``NuScenesMetric`` times out on rank 1 (in a pair of its
own, evaluating without a model: the timeout leaves its group broken). A one-rank group gives the
reference. The three groups run side by side; the rest runs in process.
"""
import copy
import json
import pickle
import re
import time
from pathlib import Path

import pytest
from mmengine.evaluator import BaseMetric

from projects.mmdet3d_plugin.evaluation import (Rank0EvaluateMixin,
                                                SafeNuScenesMetric)
from projects.mmdet3d_plugin.evaluation.metrics.rank0_evaluate import (
    DEFAULT_DIST_WAIT_TIMEOUT)
from tests.helpers.metric_wait_runner import validate_ranks
from tests.helpers.train_tool import fork_call

# Mostly waits (timeouts, sleeps): started first, beside CPU-bound modules.
pytestmark = pytest.mark.waits


REPO = Path(__file__).resolve().parents[3]
# env_cfg.dist_cfg.timeout, seconds: also the most two ranks may drift apart
# before a collective (8 s was too little on a loaded 2-core machine).
TIMEOUT = 15
SLEEP = 30  # what the slow metrics sleep before computing, seconds
SCENARIOS = [
    dict(name='ours', metric='SlowSafeNuScenesMetric', sleep=SLEEP),
    dict(name='rank0_fails', metric='FailingMetric', sleep=0),
]
# Rank 1 times out and leaves its group broken: a group of its own, where
# the stock metric evaluates alone (no model, no inference: its evaluate's
# wait is the subject).
STOCK = [dict(name='stock', metric='SlowNuScenesMetric', sleep=SLEEP,
              inference=False)]
REFERENCE = [dict(name='reference', metric='SlowSafeNuScenesMetric', sleep=0)]


def _start(out: Path, data_root: Path, world_size: int, scenarios: list):
    # loop: the metric's evaluation in a process group of its own.
    return fork_call(validate_ranks, out, str(data_root), float(TIMEOUT),
                     scenarios, world_size=world_size)


def _result(out: Path, name: str, rank: int, log: str) -> dict:
    path = out / name / f'rank{rank}.json'
    assert path.exists(), (f'{name}: rank {rank} left no result; output:\n' +
                           log[-4000:])
    return json.loads(path.read_text())


@pytest.fixture(scope='module')
def runs(tmp_path_factory, nus_synthetic):
    """name -> [rank 0 result, rank 1 result] (one for the reference, rank
    1's for stock); 'log': rank 0's output of the pair."""
    out = tmp_path_factory.mktemp('metric_wait')
    groups = dict(pair=_start(out, nus_synthetic, 2, SCENARIOS),
                  stock=_start(out, nus_synthetic, 2, STOCK),
                  single=_start(out, nus_synthetic, 1, REFERENCE))
    # Until every rank is done but stock's rank 0: it still sleeps then;
    # its outcome is moot.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for group in groups.values():
            group.poll()
        if (groups['pair'].poll() is not None and
                groups['single'].poll() is not None and
                groups['stock'].returncodes[1] is not None):
            break
        time.sleep(0.5)
    rank0_log = Path(groups['pair'].logs[0]).read_text()
    logs = {}
    for name, group in groups.items():
        group.kill()
        logs[name] = group.communicate()[0]
    results = {
        s['name']: [_result(out, s['name'], r, logs['pair'])
                    for r in range(2)]
        for s in SCENARIOS
    }
    results['stock'] = [_result(out, 'stock', 1, logs['stock'])]
    results['reference'] = [_result(out, 'reference', 0, logs['single'])]
    results['log'] = rank0_log
    return results


@pytest.mark.slow
def test_slow_evaluation_finishes_with_one_process_metrics(runs):
    [reference] = runs['reference']
    assert reference['ok'], reference
    metrics = reference['metrics']
    key = 'NuScenes metric/pred_instances_3d_NuScenes/NDS'
    assert 0.0 <= metrics[key] <= 1.0
    for rank, result in enumerate(runs['ours']):
        assert result['ok'], (rank, result)
        assert result['metrics'] == metrics
    assert ('the other ranks wait on a gloo group with a 14400 s timeout'
            in runs['log'])


def test_stock_metric_times_out_the_waiting_rank(runs):
    # What the mixin fixes; proves the test above can fail.
    [rank1] = runs['stock']
    assert not rank1['ok']
    assert f'Timed out waiting {TIMEOUT * 1000}ms' in rank1['error'], rank1


def test_rank0_failure_is_raised_on_every_rank(runs):
    rank0, rank1 = runs['rank0_fails']
    assert rank0 == dict(ok=False, error='ValueError: cannot score 2 samples')
    assert rank1 == dict(
        ok=False,
        error='RuntimeError: FailingMetric: rank 0 failed to compute the '
        'metrics (ValueError: cannot score 2 samples); see rank 0\'s log '
        'for the traceback.')


class _CountMetric(Rank0EvaluateMixin, BaseMetric):
    default_prefix = 'count'

    def process(self, data_batch, data_samples):
        self.results.extend(data_samples)

    def compute_metrics(self, results):
        if not results:
            raise ValueError('no results')
        return dict(n=len(results), total=sum(results))


def test_without_distributed_evaluates_in_process():
    metric = _CountMetric()
    metric.process(None, [1, 2, 3, 4])
    # The sampler's padding (the 4th) is dropped, as BaseMetric does.
    assert metric.evaluate(3) == {'count/n': 3, 'count/total': 6}
    assert metric.results == []
    with pytest.raises(ValueError, match='no results'):
        metric.evaluate(0)


@pytest.mark.parametrize('value', [0, -1.0, float('nan'), float('inf'), True,
                                   '3600', None])
def test_dist_wait_timeout_is_validated(value):
    with pytest.raises(
            ValueError,
            match=r'^SafeNuScenesMetric: dist_wait_timeout .* must be a '
            r'positive, finite number of seconds, got '
            f'{re.escape(repr(value))} .*; e.g. '
            r'dist_wait_timeout=14400'):
        SafeNuScenesMetric(data_root='x', ann_file='x/a.pkl',
                           dist_wait_timeout=value)


def test_dist_wait_timeout_is_kept_through_copies():
    metric = SafeNuScenesMetric(data_root='x', ann_file='x/a.pkl')
    assert metric.dist_wait_timeout == DEFAULT_DIST_WAIT_TIMEOUT == 14400
    metric = SafeNuScenesMetric(data_root='x', ann_file='x/a.pkl',
                                dist_wait_timeout=60)
    for copied in (copy.deepcopy(metric),
                   pickle.loads(pickle.dumps(metric))):
        assert copied.dist_wait_timeout == 60.0
