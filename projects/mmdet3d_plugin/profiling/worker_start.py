"""What a fresh DataLoader worker spends before its first sample.

:func:`measure_fresh_worker` starts a new Python process that imports
mmdet3d and the plugin, builds the config's train dataset and loads two
samples as one worker on one core. The first sample pays what every
worker pays once whatever its start method: numba compiles
``ObjectSample``'s collision kernels (mmdet3d's ``@numba.njit`` functions
are not cached on disk) and the first reads of the GT database. A spawn or
forkserver worker also pays the imports (and unpickles the dataset rather
than building it); a forked one inherits both.
"""
import json
import subprocess
import sys
import time
from typing import Dict, Optional

from ..constants import REPO_ROOT

#: Marks the child's result line on its stdout.
RESULT_PREFIX = 'PROFILE_WORKER_RESULT '
#: Runs in the fresh process; ``t0`` before any import of the plugin.
#: This checkout goes first on its path, before a ``projects/`` of the
#: working directory.
_CHILD = '''
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
from projects.mmdet3d_plugin.profiling.worker_start import run_child
run_child(t0, sys.argv[1])
'''


def run_child(t0: float, spec: str) -> None:
    """In the fresh process: time the imports, the dataset build and the
    first two samples; print the result line."""
    import mmdet3d.datasets  # noqa: F401  the transforms' modules
    import projects.mmdet3d_plugin  # noqa: F401  registers the plugin

    from .dataset import build_train_dataset
    from .one_core import as_one_worker
    options = json.loads(spec)
    marks = {'import_s': time.perf_counter() - t0}
    start = time.perf_counter()
    _, dataset = build_train_dataset(options['config'],
                                     options.get('data_root'),
                                     options.get('cfg_options'))
    marks['build_s'] = time.perf_counter() - start
    with as_one_worker():
        start = time.perf_counter()
        dataset[0]
        marks['first_sample_s'] = time.perf_counter() - start
        marks['first_sample_at'] = time.time()
        start = time.perf_counter()
        dataset[1 % len(dataset)]
        marks['next_sample_s'] = time.perf_counter() - start
    print(RESULT_PREFIX + json.dumps(marks), flush=True)


def measure_fresh_worker(config: str,
                         data_root: Optional[str] = None,
                         cfg_options: Optional[Dict] = None,
                         timeout: float = 600) -> Dict[str, float]:
    """Start a fresh process and time it to its first sample.

    Args:
        config (str): Config file.
        data_root (str, optional): ``--data-root``. Defaults to None.
        cfg_options (dict, optional): ``--cfg-options``. Defaults to None.
        timeout (float): Seconds to wait for the process. Defaults to 600.

    Returns:
        dict: ``import_s`` (torch, mmdet3d, the plugin), ``build_s`` (the
        config and the dataset), ``first_sample_s`` (numba compilation
        included), ``next_sample_s``, and ``to_first_sample_s``: from
        starting the process to its first sample.

    Raises:
        RuntimeError: If the process fails; the message ends with its
            stderr.
    """
    spec = json.dumps(
        dict(config=config, data_root=data_root, cfg_options=cfg_options))
    launched = time.time()
    proc = subprocess.run(
        [sys.executable, '-c', _CHILD, spec, str(REPO_ROOT)],
        capture_output=True, text=True, timeout=timeout)
    lines = [
        line for line in proc.stdout.splitlines()
        if line.startswith(RESULT_PREFIX)
    ]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f'profile_pipeline: the fresh worker process exited with '
            f'{proc.returncode} before its first samples; its stderr ends: '
            f'{proc.stderr[-2000:]}')
    marks = json.loads(lines[-1][len(RESULT_PREFIX):])
    marks['to_first_sample_s'] = marks.pop('first_sample_at') - launched
    return marks
