"""The demo trains with StragglerHook and ends with one line of what it
saw."""
from mmengine.config import Config

from projects.mmdet3d_plugin.demo.quickstart import (STRAGGLER_INTERVAL,
                                                     straggler_line,
                                                     write_job_config)
from projects.mmdet3d_plugin.engine.straggler.report import build_report


def _fig(rank, data, compute):
    return dict(rank=rank, host='vm', num_workers=1, batch_size=2,
                data_wait_ms=data, compute_ms=compute, step_ms=data + compute,
                iter_ms=data + compute + 40.0, hook_ms_per_iter=0.02)


def test_demo_config_has_the_straggler_hook(tmp_path):
    config = write_job_config(tmp_path, tmp_path / 'data', None, 1, seed=0)
    hooks = Config.fromfile(str(config)).custom_hooks
    assert dict(type='StragglerHook', interval=STRAGGLER_INTERVAL) in hooks
    assert 'DDPUnusedParamHook' in [h['type'] for h in hooks]


def test_demo_last_line_summarises_rank_timing():
    report = build_report([_fig(0, 130.0, 480.0), _fig(1, 128.0, 470.0)],
                          (401, 450), 1.5, 20.0, dict(clock='host'))
    assert straggler_line(report) == (
        'StragglerHook: 2 ranks, data wait 129 ms, compute 475 ms per '
        'iteration: no straggler (input share 21 %) [iterations 401-450]')
    slow = build_report([_fig(0, 5.0, 480.0), _fig(1, 400.0, 470.0)],
                        (401, 450), 1.5, 20.0, dict(clock='host'))
    assert straggler_line(slow).startswith(
        'StragglerHook: 2 ranks, data wait 202 ms, compute 475 ms per '
        'iteration: rank 1 is input-bound (data wait 400 ms vs 5 ms): '
        'num_workers 1 -> ')
    assert straggler_line(None) == (
        "StragglerHook: no rank_timing.json in the run's log dir")
