"""Starting ``tools/train.py`` and ``tools/dist_train.sh`` as users do, for
the tests that train through the tools (output merged, as text)."""
import os
import subprocess
import sys
from pathlib import Path

from projects.mmdet3d_plugin.dist.ports import free_port

REPO = Path(__file__).resolve().parents[2]


def tool_env(**extra) -> dict:
    """This environment with the repository importable, the launchers'
    ``PYTHON`` this interpreter, one-line errors on, and ``extra``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               **extra)
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    return env


def start_train(config: Path, work: Path, *flags) -> subprocess.Popen:
    """``tools/train.py CONFIG --work-dir WORK FLAGS...``, started."""
    return subprocess.Popen(
        [sys.executable, str(REPO / 'tools' / 'train.py'), str(config),
         '--work-dir', str(work), *map(str, flags)], cwd=REPO,
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def start_dist_train(config: Path, work: Path, restarts: int = 0,
                     *flags) -> subprocess.Popen:
    """``MAX_RESTARTS=restarts tools/dist_train.sh CONFIG 2 --work-dir WORK
    FLAGS...`` (2 ranks on a free port), started."""
    return subprocess.Popen(
        ['bash', str(REPO / 'tools' / 'dist_train.sh'), str(config), '2',
         '--work-dir', str(work), *map(str, flags)], cwd=REPO,
        env=tool_env(MAX_RESTARTS=str(restarts), PORT=str(free_port())),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def replay_step(work: Path, iteration: int, *flags) -> subprocess.Popen:
    """``tools/replay_step.py WORK --iteration N FLAGS...``, started."""
    return subprocess.Popen(
        [sys.executable, str(REPO / 'tools' / 'replay_step.py'), str(work),
         '--iteration', str(iteration), *map(str, flags)], cwd=REPO,
        env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
