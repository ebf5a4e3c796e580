"""One rank of the distributed tests, started as torchrun starts a rank.

Usage (with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set)::

    python -m tests.helpers.ddp_runner OUT_DIR SCENARIOS_JSON

``SCENARIOS_JSON`` is a list of ``{"name": ..., "kwargs": {...}}``; each
scenario trains a fresh Runner built from
``toy_models.runner_cfg(OUT_DIR/<name>, distributed=True, **kwargs)`` in
this one process group (``"centerpoint": true`` in kwargs swaps in the tiny
CenterPoint and its data), one after the other, so the processes start
once. The outcome goes to ``OUT_DIR/<name>/rank<N>.json``: ``ok``, the
error, its cause and the ``log_dir``.
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

import projects.mmdet3d_plugin  # noqa: E402,F401  registers the hook
# registers the toy model and data
from tests.helpers import toy_models  # noqa: E402
from tests.helpers.rank_scenarios import (  # noqa: E402
    exit_without_teardown, run_scenarios)
from mmengine.config import Config  # noqa: E402
from mmengine.runner import Runner  # noqa: E402

from projects.mmdet3d_plugin.compat.cpu_dist import init_cpu_dist  # noqa: E402


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


def main() -> int:
    out = Path(sys.argv[1])
    init_cpu_dist(timeout=120)
    return run_scenarios(
        out, json.loads(sys.argv[2]), lambda scenario: run(
            out, scenario['name'], dict(scenario.get('kwargs', {}))))


if __name__ == '__main__':
    exit_without_teardown(main())
