"""What a resume late in a long epoch costs: the toy of
``fault_helpers`` with 2,400 samples in batches of 1 (one epoch of 2,400
iterations), each sample taking 6 ms to load, 2 DataLoader workers.

A checkpoint at iteration 2,390 is made fast (no load time); then a fresh
run of 10 iterations and the resume of the last 10 are timed, with the
plugin's loops (``exact=True``) or mmengine's (``exact_resume = False``).
Used by ``tests/tools/test_resume_cost.py`` and
``benchmarks/bench_resume.py``.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from tests.helpers.fault_helpers import write_config

REPO = Path(__file__).resolve().parents[2]
SIZE, AT, LOAD_MS = 2400, 2390, 6.


def cost_config(path: Path, exact: bool = True, load_ms: float = LOAD_MS,
                stop_after: Optional[int] = None,
                size: int = SIZE) -> Path:
    """The toy, 1 epoch of ``size`` iterations, checkpoint every ``AT``."""
    hooks = [dict(type='MarkFirstIterHook')]
    if stop_after is not None:
        hooks.append(dict(type='StopAfterHook', after_iter=stop_after))
    extra = (f"train_dataloader['batch_size'] = 1\n"
             f"train_dataloader['dataset']['load_ms'] = {load_ms}\n"
             "default_hooks['logger']['interval'] = 100\n")
    if not exact:
        extra += 'exact_resume = False\n'
    return write_config(path, max_epochs=1, size=size, ckpt_interval=AT,
                        custom_hooks=hooks, extra=extra)


def timed_train(config: Path, work: Path, *flags) -> dict:
    """Run ``tools/train.py``; seconds to the first iteration and to the
    end, from the process start."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    start = time.time()
    proc = subprocess.run(
        [sys.executable, str(REPO / 'tools' / 'train.py'), str(config),
         '--work-dir', str(work), *flags], cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f'train.py failed ({proc.returncode}):\n'
                           f'{proc.stdout[-5000:]}')
    first = json.loads((work / 'first_iter.json').read_text())
    return dict(first_iter_s=first['time'] - start, wall_s=end - start,
                first_iter=first['iter'], log=proc.stdout)


def checkpoint_at(tmp: Path, exact: bool = True) -> Path:
    """A work dir whose newest checkpoint is iteration ``AT`` of the
    epoch (made without load time)."""
    work = tmp / f'late_{"ours" if exact else "stock"}'
    timed_train(cost_config(tmp / f'make_{exact}.py', exact, load_ms=0,
                            stop_after=AT), work)
    return work
