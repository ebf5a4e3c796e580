"""The ranks of the DDPUnusedParamHook tests, forked from the test process
(``train_tool.fork_call(run_ranks, OUT_DIR, SCENARIOS)``).

``SCENARIOS`` is a list of ``{"name": ..., "kwargs": {...}}``; each
scenario trains a fresh Runner built from
``toy_models.runner_cfg(OUT_DIR/<name>, distributed=True, **kwargs)`` in
this one process group (``"centerpoint": true`` in kwargs swaps in the tiny
CenterPoint and its data), one after the other, so the ranks start once.
The outcome goes to ``OUT_DIR/<name>/rank<N>.json``: ``ok``, the error,
its cause and the ``log_dir``.
"""
from pathlib import Path

import projects.mmdet3d_plugin  # noqa: F401  registers the hook
# registers the toy model and data
from tests.helpers import toy_models
from tests.helpers.rank_scenarios import run_scenarios
from mmengine.config import Config
from mmengine.runner import Runner

from projects.mmdet3d_plugin.compat.cpu_dist import init_cpu_dist


def run(out: Path, name: str, kwargs: dict) -> dict:
    if kwargs.pop('centerpoint', False):
        kwargs['model'] = toy_models.tiny_centerpoint()
        kwargs['dataset'] = dict(type='ToyPointsDataset', size=16)
    cfg = toy_models.runner_cfg(
        str(out / name), distributed=True, **kwargs)
    cfg['experiment_name'] = name
    runner = Runner.from_cfg(Config(cfg))
    result = dict(log_dir=runner.log_dir)
    try:
        runner.train()
        result['ok'] = True
    except Exception as err:  # recorded for the test to inspect
        result.update(
            ok=False,
            error=f'{type(err).__name__}: {err}',
            cause=repr(err.__cause__) if err.__cause__ else None)
    return result


def run_ranks(out: Path, scenarios: list) -> int:
    """One rank (``RANK``, ``WORLD_SIZE``, ``MASTER_PORT``, ... set): joins
    the gloo group and runs ``scenarios`` in it."""
    init_cpu_dist(timeout=120)
    return run_scenarios(
        out, scenarios, lambda scenario: run(
            out, scenario['name'], dict(scenario.get('kwargs', {}))))
