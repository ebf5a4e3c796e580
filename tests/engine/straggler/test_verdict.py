"""The straggler decision, its fix and its text, from per-rank figures."""
import math

import pytest

from projects.mmdet3d_plugin.engine.straggler.timing import (RankWindow,
                                                             IterationMarks,
                                                             HostClock,
                                                             figures)
from projects.mmdet3d_plugin.engine.straggler.report import (build_report,
                                                             describe,
                                                             summary_line)
from projects.mmdet3d_plugin.engine.straggler.verdict import input_fix, judge


def fig(rank, data, compute, iter_ms=None, workers=2, batch=4, **extra):
    """One rank's figures (milliseconds)."""
    return dict(rank=rank, host=f'node-{rank // 8}', local_rank=rank % 8,
                local_world_size=8, cpus=64, num_workers=workers,
                batch_size=batch, data_wait_ms=data, compute_ms=compute,
                step_ms=None if data is None else data + compute,
                iter_ms=iter_ms if iter_ms is not None else 500.0, **extra)


def even(n=4, data=5.0, compute=300.0):
    return [fig(r, data, compute) for r in range(n)]


# ranks, expected (slowest_rank, bound, slow_ranks)
CASES = [
    ('all_even', even(), (None, None, [])),
    ('one_process', even(1), (None, None, [])),
    ('slow_loader', even()[:2] + [fig(2, 400.0, 300.0)] + even()[3:],
     (2, 'input', [2])),
    ('slow_compute', even()[:3] + [fig(3, 5.0, 700.0)], (3, 'compute', [3])),
    # 1.4x the others' median: inside the margin.
    ('below_ratio', even()[:3] + [fig(3, 5.0, 425.0)], (None, None, [])),
    # 3x, but only 10 ms more: inside the margin.
    ('below_min_ms', [fig(r, 1.0, 4.0) for r in range(3)] +
     [fig(3, 1.0, 14.0)], (None, None, [])),
    # Two slow ranks: the slower is the straggler, both are listed.
    ('two_slow', even()[:2] + [fig(2, 5.0, 700.0), fig(3, 600.0, 300.0)],
     (3, 'input', [3, 2])),
    # Both parts lead; the larger lead decides.
    ('mixed', even()[:3] + [fig(3, 150.0, 500.0)], (3, 'compute', [3])),
    ('two_ranks', [fig(0, 2.0, 10.0), fig(1, 80.0, 11.0)],
     (1, 'input', [1])),
    ('unmeasured', even()[:3] + [fig(3, None, None)], (None, None, [])),
]


@pytest.mark.parametrize('ranks,expected', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_judge(ranks, expected):
    verdict = judge(ranks)
    assert (verdict['slowest_rank'], verdict['bound'],
            verdict['slow_ranks']) == expected
    assert (verdict['fix'] is None) == (expected[0] is None)


@pytest.mark.parametrize('ratio,min_ms,slow', [
    (1.5, 20.0, 3), (2.5, 20.0, None), (1.5, 500.0, None), (1.1, 0.0, 3)])
def test_margin_is_configurable(ratio, min_ms, slow):
    ranks = even()[:3] + [fig(3, 5.0, 700.0)]  # 705 vs 305 ms: 2.3x
    assert judge(ranks, ratio, min_ms)['slowest_rank'] == slow


# workers, data wait, iteration -> load per batch, workers needed
FIXES = [
    # Without workers the main process loads: a batch is the data wait.
    (0, 80.0, 85.0, 80.0, 16),
    # One worker that each iteration waits for: a batch takes an iteration.
    (1, 150.0, 200.0, 200.0, 4),
    # Four workers, each delivering every fourth iteration.
    (4, 300.0, 400.0, 1600.0, 16),
]


@pytest.mark.parametrize('workers,data,iter_ms,load,needed', FIXES)
def test_input_fix_feeds_the_measured_step(workers, data, iter_ms, load,
                                           needed):
    fix = input_fix(fig(1, data, 5.0, iter_ms=iter_ms, workers=workers))
    assert fix['current_num_workers'] == workers
    assert fix['load_ms_per_batch'] == pytest.approx(load)
    assert fix['load_ms_per_sample'] == pytest.approx(load / 4)
    assert fix['step_ms'] == pytest.approx(iter_ms - data)
    assert fix['num_workers_needed'] == needed == math.ceil(
        load / (iter_ms - data))
    assert fix['config_line'] == (
        f'train_dataloader = dict(num_workers={needed}, '
        'persistent_workers=True)')


def test_input_fix_says_when_the_host_has_too_few_cpus():
    many = input_fix(fig(1, 80.0, 5.0, iter_ms=85.0, workers=0))
    assert any('more than the 64 CPUs of node-0' in h for h in many['hints'])
    few = input_fix(fig(1, 8.0, 5.0, iter_ms=12.0, workers=0))
    assert few['num_workers_needed'] == 2
    assert not any('CPUs of' in h for h in few['hints'])


def _report(ranks, iterations=(51, 100)):
    return build_report(ranks, iterations, 1.5, 20.0, dict(clock='host'))


def test_report_keys_and_text_with_a_straggler():
    report = _report(even()[:2] + [fig(2, 400.0, 300.0, iter_ms=710.0)] +
                     even()[3:])
    assert list(report)[:3] == ['slowest_rank', 'bound', 'fix']
    assert report['others_median']['data_wait_ms'] == 5.0
    assert report['margin']['rule'].startswith(
        'a rank is slow when its data wait + compute exceeds 1.5x')
    text = describe(report)
    assert text.splitlines()[0].startswith(
        'StragglerHook: rank 2 is input-bound over iterations 51-100: data '
        'wait + compute 700.0 ms per iteration vs 305.0 ms')
    assert text.splitlines()[4].rstrip().endswith('<')  # rank 2's row
    assert 'fix: num_workers 2 -> ' in text
    assert summary_line(report) == (
        'StragglerHook: 4 ranks, data wait 5 ms, compute 300 ms per '
        'iteration: rank 2 is input-bound (data wait 400 ms vs 5 ms): '
        f'num_workers 2 -> {report["fix"]["num_workers_needed"]}')


def test_summary_line_without_a_straggler():
    report = _report(even(2, data=130.0, compute=480.0))
    assert summary_line(report) == (
        'StragglerHook: 2 ranks, data wait 130 ms, compute 480 ms per '
        'iteration: no straggler (input share 21 %)')
    compute = _report([fig(0, 5.0, 300.0), fig(1, 5.0, 900.0)])
    assert summary_line(compute).endswith(
        'rank 1 is compute-bound (compute 900 ms vs 300 ms)')


def test_hook_cost_share_of_the_iteration():
    ranks = [dict(r, hook_ms_per_iter=c)
             for r, c in zip(even(2), (0.02, 0.05))]
    assert _report(ranks)['hook_cost'] == dict(ms_per_iter=0.05,
                                               percent_of_iter=0.01)


def test_window_sums_to_figures():
    clock, window = HostClock(), RankWindow()
    for data, start in ((2.0, 10.0), (4.0, 20.0)):
        window.add('data', data)
        window.add('iter', 8.0)
        marks = IterationMarks(start)
        # 5 ms to the forward's end, of which 1 ms in DDP's pre-forward.
        marks.wrapper, marks.model, marks.end = (start + 0.001,
                                                 start + 0.002, start + 0.005)
        window.pending.append(marks)
        window.sums['iters'] += 1
    window.resolve(clock)
    out = figures(window.values())
    assert out['iters'] == out['measured_iters'] == 2
    assert out['data_wait_ms'] == 3.0
    assert out['compute_ms'] == pytest.approx(4.0)
    assert out['step_ms'] == pytest.approx(7.0)
    assert out['iter_ms'] == 8.0
    assert not out['compute_is_whole_step']


class _LateClock(HostClock):
    """A device clock whose marks complete only when waited for, as CUDA
    events complete after the host moved on."""

    def __init__(self):
        self.done = set()

    def ready(self, mark):
        return mark in self.done

    def wait(self, mark):
        self.done.add(mark)


def test_unfinished_marks_wait_for_the_end_of_the_window():
    clock, window = _LateClock(), RankWindow()
    for start in (1.0, 2.0):
        marks = IterationMarks(start)
        marks.end = start + 0.003
        window.pending.append(marks)
    window.resolve(clock)  # per iteration: never blocks
    assert window.sums['compute_n'] == 0 and len(window.pending) == 2
    clock.done.add(1.003)
    window.resolve(clock)
    assert window.sums['compute_n'] == 1 and len(window.pending) == 1
    window.resolve(clock, block=True)  # the window's end
    assert window.sums['compute_n'] == 2 and not window.pending
    assert figures(window.values())['compute_ms'] == pytest.approx(3.0)
