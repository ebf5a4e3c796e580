"""The three ways a 2-rank toy run ends, for ``tests/dist/test_teardown.py``
and ``benchmarks/bench_teardown.py``: the toy configs, their exit status,
their launch through ``tools/dist_train.sh``, and what a run printed after
its last log line.

- ``finished``: ``BNToyModel`` on 40 samples, sample 7 with a NaN feature,
  3 epochs on 2 ranks: 15 iterations, 3 non-finite steps skipped as
  designed; exit 0;
- ``stopped``: SGD with lr 1e4: ``NonFiniteGuardHook`` stops the run on
  every rank after 3 non-finite steps in a row; exit 1 (the failure
  report's cause ``nonfinite`` under a launcher);
- ``preempted``: rank 1 sends itself SIGTERM inside iteration 6 of 10
  (``PreemptionHook``): every rank saves iteration 7 and exits 85.
"""
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
from projects.mmdet3d_plugin.dist.ports import free_port
from tests.helpers.toy_config import write_toy_config

REPO = Path(__file__).resolve().parents[2]

#: What a rank that aborted at its teardown prints.
ABORT_MARKS = ('terminate called', 'Aborted', 'Fatal Python error',
               'Segmentation fault', 'core dumped')
#: A line of mmengine's logger.
LOG_LINE = re.compile(r'^\d\d/\d\d \d\d:\d\d:\d\d - mmengine - ')
_TOYS = ['tests.helpers.fault_helpers', 'tests.helpers.nonfinite_toys']


def write_run_end_configs(folder: Path) -> Dict[str, Tuple[Path, int]]:
    """Kind -> (its config written in ``folder``, its exit status)."""
    return dict(
        finished=(write_toy_config(
            folder / 'finished.py', imports=_TOYS,
            model=dict(type='BNToyModel'),
            dataset=dict(type='NaNToyDataset', size=40, nan_index=7),
            max_epochs=3, ckpt_interval=5), 0),
        stopped=(write_toy_config(
            folder / 'stopped.py', imports=_TOYS, max_iters=60,
            ckpt_interval=1, num_workers=0, lr=1e4), 1),
        preempted=(write_toy_config(
            folder / 'preempted.py', max_iters=10,
            custom_hooks=[dict(type='FailAtIterHook', at_iter=6, ranks=[1],
                               action='SIGTERM')]), PREEMPTED_EXIT_CODE),
    )


def start_run_end(config: Path, work: Path) -> subprocess.Popen:
    """``tools/dist_train.sh CONFIG 2 --work-dir WORK`` on a free port,
    started in a session of its own (output merged and unbuffered, so a
    line's place in it is when it was printed)."""
    env = dict(os.environ, PYTHON=sys.executable, PORT=str(free_port()),
               PYTHONPATH=str(REPO), PYTHONUNBUFFERED='1')
    for name in ('MMDET3D_PLUGIN_DEBUG', 'TORCHRUN_LOG_DIR', 'MAX_RESTARTS'):
        env.pop(name, None)
    return subprocess.Popen(
        ['bash', str(REPO / 'tools' / 'dist_train.sh'), str(config), '2',
         '--work-dir', str(work)], cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def after_last_log_line(out: str) -> List[str]:
    """The non-empty lines printed after mmengine's last log line."""
    lines = out.splitlines()
    last = max((i for i, line in enumerate(lines) if LOG_LINE.match(line)),
               default=-1)
    return [line for line in lines[last + 1:] if line.strip()]


def aborts(out: str) -> List[str]:
    """The :data:`ABORT_MARKS` in ``out``."""
    return [mark for mark in ABORT_MARKS if mark in out]
