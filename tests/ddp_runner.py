"""One rank of the distributed tests, started as torchrun starts a rank.

Usage (with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set)::

    python tests/ddp_runner.py OUT_DIR SCENARIOS_JSON

``SCENARIOS_JSON`` is a list of ``{"name": ..., "kwargs": {...}}``; each
scenario trains a fresh Runner built from
``toy_models.runner_cfg(OUT_DIR/<name>, distributed=True, **kwargs)`` in
this one process group (``"centerpoint": true`` in kwargs swaps in the tiny
CenterPoint and its data), one after the other, so the processes start
once. The outcome goes to ``OUT_DIR/<name>/rank<N>.json``: ``ok``, the
error, its cause and the ``log_dir``.
"""
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import projects.mmdet3d_plugin  # noqa: E402,F401  registers the hook
import toy_models  # noqa: E402  registers the toy model and data
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
    scenarios = json.loads(sys.argv[2])
    init_cpu_dist(timeout=120)
    rank = int(os.environ['RANK'])
    for scenario in scenarios:
        result = run(out, scenario['name'], dict(scenario.get('kwargs', {})))
        (out / scenario['name'] / f'rank{rank}.json').write_text(
            json.dumps(result))
    return 0


if __name__ == '__main__':
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # A failed DDP step can leave reductions pending; skip the interpreter
    # teardown that would wait for them.
    os._exit(code)
