"""The ranks of the evaluation-timeout tests, forked from the test process
(``train_tool.fork_call(validate_ranks, OUT_DIR, DATA_ROOT, TIMEOUT,
SCENARIOS)``), and the slow metrics (also imported by configs).

Validates the small synthetic CenterPoint (random weights from seed 0,
5 boxes per frame) with ``Runner.val`` under ``launcher='pytorch'`` and
``env_cfg.dist_cfg.timeout=TIMEOUT`` seconds, once per scenario of the
list ``SCENARIOS`` (``{"name", "metric", "sleep"}``), in one process
group. ``metric`` is a metric type registered here whose
``compute_metrics`` first sleeps ``sleep`` seconds:
``SlowSafeNuScenesMetric`` (the plugin's) or ``SlowNuScenesMetric``
(mmdet3d's stock one). Metric ``FailingMetric`` skips the Runner: each
rank evaluates one number and rank 0 fails. A scenario with
``"inference": false`` skips it too: the metric of the config, built
alone, evaluates no results in a process group of ``TIMEOUT`` s (what
its ``evaluate`` does with the group is the subject, not the model's
boxes).
The outcome goes to ``OUT_DIR/<name>/rank<N>.json``: ``ok``, ``metrics``
or ``error``.
"""
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from mmdet3d.evaluation.metrics import NuScenesMetric  # noqa: E402
from mmengine.evaluator import BaseMetric  # noqa: E402
from mmdet3d.registry import METRICS  # noqa: E402

from projects.mmdet3d_plugin import load_config  # noqa: E402
from tests.helpers.rank_scenarios import run_scenarios  # noqa: E402
from projects.mmdet3d_plugin.cli.runner_setup import (  # noqa: E402
    build_runner, isolate_runner, setup_distributed)
from projects.mmdet3d_plugin.compat.cpu_dist import (  # noqa: E402
    init_cpu_dist)
from projects.mmdet3d_plugin.config.data_root import (  # noqa: E402
    redirect_data_root)
from projects.mmdet3d_plugin.evaluation import (  # noqa: E402
    Rank0EvaluateMixin, SafeNuScenesMetric)

CONFIG = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
# Keep every box of the untrained model, but few per frame.
FEW_BOXES = {
    'model.pts_bbox_head.bbox_coder.score_threshold': 0.0,
    'model.test_cfg.pts.score_threshold': 0.0,
    'model.test_cfg.pts.pre_max_size': 100,
    'model.test_cfg.pts.post_max_size': 5,
}


class _SlowCompute:
    """Sleeps ``sleep`` seconds before computing the metrics."""

    def __init__(self, *args, sleep: float = 0.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sleep = sleep

    def compute_metrics(self, results: list) -> dict:
        time.sleep(self.sleep)
        return super().compute_metrics(results)


@METRICS.register_module()
class SlowSafeNuScenesMetric(_SlowCompute, SafeNuScenesMetric):
    """The plugin's metric, evaluating slowly."""


@METRICS.register_module()
class SlowNuScenesMetric(_SlowCompute, NuScenesMetric):
    """mmdet3d's stock metric, evaluating slowly."""


class FailingMetric(Rank0EvaluateMixin, BaseMetric):
    """Collects each rank's number; fails to compute (on rank 0)."""
    default_prefix = 'failing'

    def process(self, data_batch, data_samples) -> None:
        self.results.extend(data_samples)

    def compute_metrics(self, results: list) -> dict:
        raise ValueError(f'cannot score {len(results)} samples')


def _evaluate(metric: BaseMetric, size: int) -> dict:
    """``metric.evaluate(size)``; its outcome as a JSON-able dict."""
    try:
        return dict(ok=True, metrics=metric.evaluate(size))
    except Exception as err:  # recorded for the test to inspect
        return dict(ok=False, error=f'{type(err).__name__}: {err}')


def validate(out: Path, data_root: str, timeout: float, name: str,
             metric: str, sleep: float, inference: bool = True) -> dict:
    """``Runner.val`` of one scenario (or, without ``inference``, the
    metric's ``evaluate`` alone); its outcome as a JSON-able dict."""
    if metric == 'FailingMetric':
        failing = FailingMetric()
        failing.process(None, [int(os.environ['RANK'])])
        return _evaluate(failing, 2)
    cfg = load_config(str(CONFIG))
    cfg.merge_from_dict(FEW_BOXES)
    redirect_data_root(cfg, data_root)
    cfg.val_evaluator.update(type=metric, sleep=sleep)
    if not inference:
        init_cpu_dist(timeout=timeout)
        kwargs = {k: v for k, v in cfg.val_evaluator.items()
                  if k not in ('type', '_scope_')}
        return _evaluate(METRICS.get(metric)(**kwargs), 0)
    cfg.val_dataloader.update(num_workers=0, persistent_workers=False)
    cfg.env_cfg.dist_cfg = dict(backend='gloo', timeout=timeout)
    cfg.randomness = dict(seed=0)
    cfg.launcher = 'pytorch'
    cfg.work_dir = str(out / name)
    isolate_runner(cfg, name)
    setup_distributed(cfg)
    runner = build_runner(cfg)
    try:
        return dict(ok=True, metrics=runner.val())
    except Exception as err:  # recorded for the test to inspect
        return dict(ok=False, error=f'{type(err).__name__}: {err}')


def validate_ranks(out: Path, data_root: str, timeout: float,
                   scenarios: list) -> int:
    """One rank (``RANK``, ``WORLD_SIZE``, ``MASTER_PORT``, ... set): runs
    ``scenarios`` in one process group."""
    return run_scenarios(
        out, scenarios,
        lambda scenario: validate(out, data_root, timeout, **scenario))
