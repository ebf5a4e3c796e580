"""One way to run a training in the tests, in three modes.

* **in process** (:func:`train_in_process`): ``tools/train.py``'s entry
  point called in the test process, for checks of a hook or a loop that
  need neither ranks nor a process of their own;
* **forked ranks** (:func:`fork_train`, :func:`fork_dist_train`): N ranks
  forked from the test process after the stack is imported
  (:func:`warm`), each with the environment torchrun gives a rank
  (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
  ``MASTER_PORT``), running ``tools/train.py`` itself (its ``__main__``:
  argument checks, the plugin's ``cli.run.train``, one-line user errors,
  the error file) over gloo. For checks whose subject is a hook, a loop or
  a report: a rank costs what the run does, not the ~13 CPU-s of a fresh
  interpreter importing the stack;
* **a real launch** (:func:`start_train`, :func:`start_dist_train`,
  :func:`start_tool`): ``python tools/<tool>.py`` / ``tools/dist_train.sh``
  as users start them, for checks whose subject is the launcher or the
  tool (``docs/development.md`` lists them).

Forked ranks and real launches return objects with ``Popen``'s
``communicate`` / ``returncode``, so :func:`finish` runs both side by
side.
"""
import functools
import io
import json
import logging
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import psutil

from projects.mmdet3d_plugin.dist.ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: What torch elastic names a rank's error file.
ERROR_FILE = 'error.json'


def tool_env(**extra) -> dict:
    """This environment with the repository importable, the launchers'
    ``PYTHON`` this interpreter, one-line errors on, and ``extra``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHON=sys.executable,
               **extra)
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    return env


def start_tool(tool: str, *args, **env) -> subprocess.Popen:
    """``python tools/<tool>.py ARGS...`` in the repository, started
    (output merged, as text; ``env`` added to the environment)."""
    return subprocess.Popen(
        [sys.executable, str(REPO / 'tools' / f'{tool}.py'),
         *map(str, args)], cwd=REPO, env=tool_env(**env),
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


def finish(procs: dict, timeout: float = 900) -> dict:
    """``{name: (output, returncode)}`` of started processes or forked
    ranks, each waited for up to ``timeout`` seconds."""
    return {name: (p.communicate(timeout=timeout)[0], p.returncode)
            for name, p in procs.items()}


# --------------------------------------------------------------------------
# Forked ranks


def warm() -> None:
    """Import what a training process imports (mmdet3d's registries and
    the plugin, the tools' entry points, the test toys), so that ranks
    forked afterwards start with it. Once per process."""
    from mmdet3d.utils import register_all_modules

    import projects.mmdet3d_plugin.registration  # noqa: F401
    from projects.mmdet3d_plugin.cli import run  # noqa: F401
    from projects.mmdet3d_plugin.failures import record  # noqa: F401
    from tests.helpers import fault_helpers  # noqa: F401
    register_all_modules(init_default_scope=False)


class ForkedRanks:
    """Ranks forked from this process, each running ``tools/<tool>.py`` as
    ``__main__`` (``main`` its ``sys.argv``) or a callable.

    Each rank is a child of the test process with its own process group,
    its output (stdout and stderr) in a file of its own, and the
    environment torchrun gives a rank (``RANK``, ``LOCAL_RANK``,
    ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``;
    one thread each, as torchrun sets ``OMP_NUM_THREADS=1``) when
    ``world_size`` > 1 or ``rank_vars``. Use it as a ``Popen``:
    :meth:`communicate` returns the ranks' outputs, one after the other,
    and ``returncode`` is the first non-zero exit status in rank order (a
    signal as ``-N``), else 0; ``returncodes`` has each rank's.

    Args:
        main (list | callable): ``[script, *args]``, run as ``__main__``;
            or the rank's work, whose return value (an int, None for 0) or
            uncaught error is the rank's exit status.
        world_size (int): Ranks. Defaults to 1.
        env (dict, optional): Variables added to each rank's environment.
        rank_vars (bool, optional): Set the rank variables with one rank
            too. Defaults to ``world_size > 1``.
        errors (Path, optional): Give rank ``r`` the torch elastic error
            file ``<errors>/<r>/error.json`` (``TORCHELASTIC_ERROR_FILE``,
            the Slurm launchers' layout), where it records its uncaught
            error or the hang the watchdog found (:func:`error_files`).
    """

    def __init__(self, main, world_size: int = 1,
                 env: Optional[Dict[str, str]] = None,
                 rank_vars: Optional[bool] = None,
                 errors: Optional[Path] = None) -> None:
        warm()
        if callable(main):
            run, name = main, getattr(main, '__name__', 'call')
        else:
            argv = [str(arg) for arg in main]
            run, name = functools.partial(_run_script, argv), \
                Path(argv[0]).stem
        if rank_vars is None:
            rank_vars = world_size > 1
        port = free_port()
        self.logs: List[str] = []
        self.pids: List[int] = []
        self.returncodes: List[Optional[int]] = [None] * world_size
        for rank in range(world_size):
            rank_env = dict(env or {})
            if rank_vars:
                rank_env.update(
                    RANK=str(rank), LOCAL_RANK=str(rank),
                    WORLD_SIZE=str(world_size),
                    LOCAL_WORLD_SIZE=str(world_size),
                    MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
            if errors is not None:
                (Path(errors) / str(rank)).mkdir(parents=True, exist_ok=True)
                rank_env['TORCHELASTIC_ERROR_FILE'] = str(
                    Path(errors) / str(rank) / ERROR_FILE)
            fd, log = tempfile.mkstemp(prefix=f'{name}-rank{rank}-',
                                       suffix='.out')
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the rank: never returns
                _rank_main(fd, run, rank_env, rank_vars)
            os.close(fd)
            self.logs.append(log)
            self.pids.append(pid)

    @property
    def returncode(self) -> Optional[int]:
        if any(code is None for code in self.returncodes):
            return None
        return next((code for code in self.returncodes if code), 0)

    def poll(self) -> Optional[int]:
        for i, pid in enumerate(self.pids):
            if self.returncodes[i] is None:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    self.returncodes[i] = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(
                    f'forked ranks {self.pids}', timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int, rank: int = 0) -> None:
        """Send ``signum`` to one rank (not its DataLoader workers)."""
        os.kill(self.pids[rank], signum)

    def kill(self) -> None:
        """SIGKILL every rank still running and the processes it
        started."""
        for i, pid in enumerate(self.pids):
            if self.returncodes[i] is None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def output(self) -> str:
        """What the ranks printed so far, rank after rank."""
        return ''.join(Path(log).read_text(errors='replace')
                       for log in self.logs)

    def communicate(self, timeout: Optional[float] = None
                    ) -> Tuple[str, None]:
        """Wait for every rank (killing them all past ``timeout``, then
        raising ``TimeoutExpired``); ``(output, None)`` as ``Popen``."""
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
            raise
        finally:
            out = self.output()
        for log in self.logs:
            os.unlink(log)
        self.logs = []
        return out, None


def _rank_main(fd: int, run: Callable[[], Optional[int]],
               env: Dict[str, str], one_thread: bool) -> None:
    """The forked rank: its output to ``fd``, ``env`` set, ``run()``,
    its own children ended, then ``os._exit`` (the test process's exit
    functions and pytest's frames stay the parent's)."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, 'w', closefd=False),
                                      line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, 'w', closefd=False),
                                      line_buffering=True)
        _retarget_log_streams()
        os.environ.update(env)
        os.environ.pop('MMDET3D_PLUGIN_DEBUG', None)
        os.chdir(REPO)
        if one_thread:
            import torch
            torch.set_num_threads(1)
        # Leave the test process's signal handlers (pytest-timeout's
        # alarm) behind.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        try:
            code = run() or 0
        except SystemExit as done:
            if done.code is None or isinstance(done.code, int):
                code = done.code or 0
            else:
                print(done.code, file=sys.stderr)
                code = 1
    except BaseException:  # noqa: BLE001  the rank's uncaught error
        traceback.print_exc()
        code = 1
    finally:
        try:
            _end_children()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _run_script(argv: list) -> None:
    """``argv[0]`` run as ``__main__`` with ``sys.argv = argv`` (as
    strings)."""
    sys.argv = [str(arg) for arg in argv]
    runpy.run_path(sys.argv[0], run_name='__main__')


def _retarget_log_streams() -> None:
    """Give the rank the console logging of a fresh process: logging's
    console handlers write to this rank's output (made in the test
    process, they write to pytest's capture of some earlier test, maybe
    closed), and mmengine's current logger (what ``print_log(...,
    logger='current')`` writes to before the Runner makes its own) is a new
    one at INFO, as the default one a fresh process makes."""
    from mmengine.logging import MMLogger
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values()
        if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in lg.handlers:
            if (isinstance(handler, logging.StreamHandler)
                    and not isinstance(handler, logging.FileHandler)):
                handler.acquire()
                try:  # not setStream: it flushes the old stream
                    handler.stream = sys.stdout
                finally:
                    handler.release()
    MMLogger.get_instance(f'mmengine_rank_{os.getpid()}', log_level='INFO')


def _end_children() -> None:
    """SIGKILL what the rank started and left running (its DataLoader
    workers ignore SIGTERM under ``PreemptionHook``, whose exit function
    kills them so in a rank that exits normally)."""
    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(children, timeout=5)


def _tool_argv(tool: str, *args) -> list:
    return [REPO / 'tools' / f'{tool}.py', *args]


def fork_tool(tool: str, *args, world_size: int = 1,
              **env) -> ForkedRanks:
    """``tools/<tool>.py ARGS...`` in ``world_size`` forked ranks
    (``--launcher pytorch`` is the caller's to pass)."""
    return ForkedRanks(_tool_argv(tool, *args), world_size, env)


def fork_train(config: Path, work: Path, *flags, **env) -> ForkedRanks:
    """``tools/train.py CONFIG --work-dir WORK FLAGS...`` in one forked
    process (as :func:`start_train` runs it)."""
    return ForkedRanks(_tool_argv('train', config, '--work-dir', work,
                                  *flags), 1, env)


def fork_dist_train(config: Path, work: Path, *flags, world_size: int = 2,
                    errors: Optional[Path] = None, **env) -> ForkedRanks:
    """``tools/train.py CONFIG --launcher pytorch --work-dir WORK
    FLAGS...`` in ``world_size`` forked ranks over gloo (as
    ``tools/dist_train.sh CONFIG N`` runs each rank); with ``errors``,
    each rank's error file under it (:class:`ForkedRanks`)."""
    return ForkedRanks(
        _tool_argv('train', config, '--launcher', 'pytorch', '--work-dir',
                   work, *flags), world_size, env, errors=errors)


def fork_call(target: Callable, *args, world_size: int = 2,
              **env) -> ForkedRanks:
    """``target(*args)`` in ``world_size`` ranks forked from this process
    over a local rendezvous (the rank variables set, a group of one
    included), for rank runners that are no tool."""
    return ForkedRanks(functools.partial(target, *args), world_size, env,
                       rank_vars=True)


def error_files(errors: Path) -> Dict[int, dict]:
    """``{rank: error file JSON}`` of the ranks that wrote one under
    ``errors`` (see :class:`ForkedRanks`)."""
    return {int(path.parent.name): json.loads(path.read_text())
            for path in Path(errors).glob(f'*/{ERROR_FILE}')}


def train_in_process(config: Path, work: Path, *flags) -> int:
    """``tools/train.py CONFIG --work-dir WORK FLAGS...`` run in this
    process; its exit status (0, or what the tool exits with)."""
    warm()
    argv = sys.argv
    try:
        _run_script(_tool_argv('train', config, '--work-dir', work, *flags))
        return 0
    except SystemExit as done:
        return done.code or 0
    finally:
        sys.argv = argv
