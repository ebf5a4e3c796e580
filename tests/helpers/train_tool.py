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


def start_tool(tool: str, *args) -> subprocess.Popen:
    """``python tools/<tool>.py ARGS...`` in the repository, started
    (output merged, as text)."""
    return subprocess.Popen(
        [sys.executable, str(REPO / 'tools' / f'{tool}.py'),
         *map(str, args)], cwd=REPO, env=tool_env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def start_train(config: Path, work: Path, *flags) -> subprocess.Popen:
    """``tools/train.py CONFIG --work-dir WORK FLAGS...``, started."""
    return start_tool('train', config, '--work-dir', work, *flags)


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
    return start_tool('replay_step', work, '--iteration', iteration, *flags)


def finish(procs: dict, timeout: float = 900) -> dict:
    """``{name: (output, returncode)}`` of started processes, each waited
    for up to ``timeout`` seconds."""
    return {name: (p.communicate(timeout=timeout)[0], p.returncode)
            for name, p in procs.items()}
