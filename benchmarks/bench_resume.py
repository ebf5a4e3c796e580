"""What a resume costs against its position in the epoch, the plugin's
loops and mmengine's side by side, and what saving the data position
costs.

The toy of ``tests/helpers/resume_cost.py``: one epoch of 2,400
iterations (batch 1), each sample 6 ms to load, 2 DataLoader workers. For
each position P (a checkpoint at iteration P, made without load time), a
run resumes from it and trains to the end of the epoch; the table gives
the seconds from the process start to its first new iteration, for the
plugin's ``ResumableEpochBasedTrainLoop`` ("ours") and mmengine's
``EpochBasedTrainLoop`` ("stock": it replays the epoch from batch 0, so
its "first new iteration" is the first iteration after P it trains, which
it reaches after replaying P of them). A fresh start is the baseline.

Then the checkpoint: the size of ``meta['data_position']`` and the time
``DataPositionHook.before_save_checkpoint`` takes (the extra state to
save; the samples' random state needs none, it is a function of the
position).

    python benchmarks/bench_resume.py [--positions 10 1200 2390]
        [--out benchmarks/results/bench_resume.json]
"""
import argparse
import json
import os
import os.path as osp
import pickle
import sys
import tempfile
import time
from pathlib import Path

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.helpers import resume_cost  # noqa: E402


def _resume_row(tmp: Path, exact: bool, position: int) -> dict:
    work = resume_cost.checkpoint_at(tmp, exact, position)
    # mmengine's loop replays the epoch from its first batch: the first
    # batch it had not trained comes after `position` replayed ones.
    stop = position + 10 if exact else 2 * position + 1
    config = resume_cost.cost_config(tmp / f'run_{exact}_{position}.py',
                                     exact, stop_after=stop)
    timing = resume_cost.timed_train(config, work, '--resume')
    if not exact:
        timing['first_iter_s'] = timing['wall_s']
    return dict(loop='ours' if exact else 'stock', position=position,
                first_new_iter_s=round(timing['first_iter_s'], 2),
                wall_s=round(timing['wall_s'], 2))


def _save_cost() -> dict:
    from projects.mmdet3d_plugin.engine.resume.position import DataPosition
    position = DataPosition(epoch=3, start=0, batches=2390, per_batch=32)
    start = time.perf_counter()
    for _ in range(10000):
        meta = position.meta(seed=123, world_size=8, batch_size=4)
    per_call = (time.perf_counter() - start) / 10000
    return dict(data_position_bytes=len(pickle.dumps(meta)),
                data_position_us=round(per_call * 1e6, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--positions', type=int, nargs='+',
                        default=[10, 1200, 2390])
    parser.add_argument('--out', default=osp.join(
        REPO, 'benchmarks', 'results', 'bench_resume.json'))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fresh = resume_cost.timed_train(
            resume_cost.cost_config(tmp / 'fresh.py', stop_after=10),
            tmp / 'fresh')
        rows.append(dict(loop='fresh start', position=0,
                         first_new_iter_s=round(fresh['first_iter_s'], 2),
                         wall_s=round(fresh['wall_s'], 2)))
        for position in args.positions:
            for exact in (True, False):
                rows.append(_resume_row(tmp, exact, position))
    save = _save_cost()
    print(f'{"loop":<12} {"position":>9} {"first new iter s":>17} '
          f'{"wall s":>8}')
    for row in rows:
        print(f'{row["loop"]:<12} {row["position"]:>9} '
              f'{row["first_new_iter_s"]:>17} {row["wall_s"]:>8}')
    print(f'data position in the checkpoint: {save["data_position_bytes"]} '
          f'bytes pickled, {save["data_position_us"]} us to build')
    os.makedirs(osp.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(dict(rows=rows, save=save, samples=resume_cost.SIZE,
                       load_ms=resume_cost.LOAD_MS), f, indent=1)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()
