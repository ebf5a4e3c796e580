"""What a resume late in a long epoch costs: the toy of
``toy_config`` with 2,400 samples in batches of 1 (one epoch of 2,400
iterations), each sample taking 6 ms to load, 2 DataLoader workers.

A checkpoint at iteration 2,390 is made fast (no load time); then a fresh
run of 10 iterations and the resume of the last 10 are timed, with the
plugin's loops (``exact=True``) or mmengine's (``exact_resume = False``),
and the samples a run loads can be counted (``loads_file``). Used by
``tests/engine/resume/test_resume_cost.py`` (the count) and
``benchmarks/bench_resume.py`` (the times).
"""
import json
import time
from pathlib import Path
from typing import List, Optional, Tuple

from tests.helpers.toy_config import write_toy_config
from tests.helpers.train_tool import start_train

REPO = Path(__file__).resolve().parents[2]
SIZE, AT, LOAD_MS = 2400, 2390, 6.


def cost_config(path: Path, exact: bool = True, load_ms: float = LOAD_MS,
                stop_after: Optional[int] = None, size: int = SIZE,
                interval: int = AT,
                loads_file: Optional[Path] = None) -> Path:
    """The toy, 1 epoch of ``size`` iterations, checkpoint every
    ``interval``; each sample loaded is appended to ``loads_file`` if
    given."""
    hooks = [dict(type='MarkFirstIterHook')]
    if stop_after is not None:
        hooks.append(dict(type='StopAfterHook', after_iter=stop_after,
                          exit_process=True))
    dataset = dict(type='FaultToyDataset', size=size, load_ms=load_ms)
    if loads_file is not None:
        dataset['loads_file'] = str(loads_file)
    # Batch 1 at the toy's LR 0.05 with momentum diverges within a few
    # hundred iterations (the non-finite guard would stop the run).
    return write_toy_config(
        path, dataset=dataset, batch_size=1, max_epochs=1,
        ckpt_interval=interval, lr=0.005, log_interval=100,
        custom_hooks=hooks, exact_resume=None if exact else False)


def timed_runs(*runs: Tuple[Path, Path, tuple]) -> List[dict]:
    """Run ``tools/train.py`` for each ``(config, work_dir, flags)``, side
    by side (so that they share the machine's load); for each, seconds to
    its first iteration and to its end, from its process start."""
    started = [(time.time(), work, start_train(config, work, *flags))
               for config, work, flags in runs]
    results = []
    for start, work, proc in started:
        log = proc.communicate(timeout=900)[0]
        end = time.time()
        if proc.returncode != 0:
            raise RuntimeError(f'train.py failed ({proc.returncode}):\n'
                               f'{log[-5000:]}')
        first = json.loads((work / 'first_iter.json').read_text())
        results.append(dict(first_iter_s=round(first['time'] - start, 2),
                            wall_s=round(end - start, 2),
                            first_iter=first['iter'], log=log))
    return results


def timed_train(config: Path, work: Path, *flags) -> dict:
    """:func:`timed_runs` of one run."""
    return timed_runs((config, work, flags))[0]


def checkpoint_at(tmp: Path, exact: bool = True, position: int = AT,
                  size: int = SIZE) -> Path:
    """A work dir whose newest checkpoint is iteration ``position`` of an
    epoch of ``size`` (made without load time)."""
    work = tmp / f'late_{"ours" if exact else "stock"}_{position}'
    timed_train(cost_config(tmp / f'make_{exact}_{position}.py', exact,
                            load_ms=0, stop_after=position, size=size,
                            interval=position), work)
    return work
