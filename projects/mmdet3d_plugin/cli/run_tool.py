"""One clear line instead of a traceback for user errors in the tools.

The plugin reports bad input (config keys, paths, info files, preset values,
hook arguments) as ``FileNotFoundError``, ``ValueError`` or ``TypeError``
(and a precision this machine cannot run as ``AmpUnsupportedError``)
whose message starts with a context prefix and ends with the fix. The tools
(``tools/*.py``) run through :func:`run_tool`, which prints such errors as
``error: <message>`` on stderr and exits with status 1 (or the tool's
own). Everything else (``RuntimeError``, a bug) keeps its traceback; a
DataLoader worker killed by a signal gets a last line naming the worker
and the signal (:func:`worker_death_message`). ``--debug``
(:func:`.parsers.add_debug_flag`) or ``MMDET3D_PLUGIN_DEBUG=1`` shows the
traceback of user errors too.
"""
import os
import re
import signal
import sys
import traceback
from typing import Any, Callable, Optional

from ..constants import CUSTOM_IMPORTS
from ..failures.causes import known_error, signal_hint
from ..failures.exceptions import (AmpUnsupportedError, BadSampleError,
                                   BadSamplesError, GradientCoverageError)
from .parsers import DEBUG_ENV


USER_ERROR_TYPES = (FileNotFoundError, FileExistsError, ValueError,
                    TypeError, ImportError, AmpUnsupportedError,
                    BadSampleError, BadSamplesError, GradientCoverageError)

_REGISTRY_RE = re.compile(
    r'^(?P<type>\S+) is not in the (?P<registry>\S+) registry\.')
_WORKER_RE = re.compile(r'^Caught (\w+) in DataLoader worker process (\d+)\.')
_KILLED_RE = re.compile(
    r'DataLoader worker \(pid \d+\) is killed by signal: (?P<signal>[^\n]+)')
_EXITED_RE = re.compile(
    r'DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly')


def registry_error_message(exc: KeyError) -> Optional[str]:
    """Explain mmengine's ``KeyError: 'X is not in the ... registry'``.

    Args:
        exc (KeyError): The error raised by a registry's ``build``.

    Returns:
        str | None: The explanation, or None for other KeyErrors.
    """
    text = exc.args[0] if exc.args else ''
    match = _REGISTRY_RE.match(str(text))
    if match is None:
        return None
    name, registry = match['type'], match['registry']
    return (f'config: type {name!r} is not in the {registry} registry. '
            f"Check the spelling and default_scope = 'mmdet3d'; if {name} "
            'comes from a plugin, import the plugin in the config: '
            "custom_imports = dict(imports=['<plugin module>'], "
            f'allow_failed_imports=False); for this plugin: {CUSTOM_IMPORTS}.')


def error_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, or of the error a DataLoader worker
    caught (the last line of the traceback PyTorch passes on)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if lines and _WORKER_RE.match(lines[0]):
        return lines[-1]
    return f'{type(exc).__name__}: {" ".join(lines)}'


def user_error_message(exc: BaseException) -> Optional[str]:
    """The one-line message for a user error, or None for other errors.

    A known upstream bug (``failures.causes.KNOWN_ERRORS``) is named with
    its fix.
    A user error raised inside a DataLoader worker arrives wrapped by
    PyTorch (``Caught FileNotFoundError in DataLoader worker process 0.``
    followed by the worker's traceback); its message becomes the worker
    line plus the original error's last line.

    Args:
        exc (BaseException): The error that stopped the tool.

    Returns:
        str | None: The message to print, or None to show the traceback.
    """
    known = known_error(exc)
    if known is not None:
        return f'{error_line(exc)}: {known.cause}. Fix: {known.fix}.'
    if isinstance(exc, KeyError):
        return registry_error_message(exc)
    if not isinstance(exc, USER_ERROR_TYPES):
        return None
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return f'{type(exc).__name__} (no message)'
    worker = _WORKER_RE.match(lines[0])
    if worker is not None:
        return f'{lines[0]} {lines[-1].strip()}'
    return ' '.join(line.strip() for line in lines)


def worker_death_message(exc: BaseException) -> Optional[str]:
    """Say which DataLoader worker died and of what, if one did.

    PyTorch reports a worker killed by a signal either directly
    (``DataLoader worker (pid N) is killed by signal: Killed.``) or, when
    the main process notices it while waiting for data, as ``DataLoader
    worker (pid(s) N) exited unexpectedly`` caused by the former; this
    finds the most precise of them in the exception chain.

    Args:
        exc (BaseException): The error that stopped training.

    Returns:
        str | None: The worker, its cause and what to check; None if no
        worker died.
    """
    found = None
    lost_connection = False
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).strip()
        killed = _KILLED_RE.search(text)
        if killed is not None:
            return killed.group(0).strip() + signal_hint(killed['signal'])
        if found is None and _EXITED_RE.search(text):
            found = _EXITED_RE.search(text).group(0)
        lost_connection |= isinstance(exc, (ConnectionError, EOFError))
        exc = exc.__cause__ or exc.__context__
    if found is None and lost_connection:
        found = _killed_child()
    return found


def _killed_child() -> Optional[str]:
    """Describe a child process that a signal killed, without reaping it.

    A batch of tensors travels from a DataLoader worker as shared-memory
    file descriptors that the main process fetches from the worker; if the
    worker died in between, the main process sees only a
    ``ConnectionResetError`` (or ``EOFError``). The dead worker is still
    an unreaped child then. Each child is asked on its own: another child
    that ended normally and waits to be reaped (``waitid(P_ALL)`` would
    report only that one) does not hide the killed worker.
    """
    import psutil
    if not hasattr(os, 'waitid'):
        return None
    for child in psutil.Process().children():
        try:
            status = os.waitid(os.P_PID, child.pid,
                               os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            continue
        if status is None or status.si_code not in (os.CLD_KILLED,
                                                    os.CLD_DUMPED):
            continue
        try:
            name = signal.Signals(status.si_status).name
        except ValueError:
            name = f'signal {status.si_status}'
        return (f'DataLoader worker (pid {status.si_pid}) is killed by '
                f'signal: {name} (the main process lost the connection to '
                f'it while receiving a batch).' + signal_hint(name))
    return None


def debug_requested(args: Any = None) -> bool:
    """Whether ``--debug`` or ``MMDET3D_PLUGIN_DEBUG`` asks for tracebacks."""
    if getattr(args, 'debug', False):
        return True
    return os.environ.get(DEBUG_ENV, '').lower() not in ('', '0', 'false')


def run_tool(fn: Callable[[Any], Any], args: Any, status: int = 1) -> Any:
    """Call ``fn(args)``; print user errors as one line and exit ``status``.

    Args:
        fn (callable): The tool's work, e.g. ``cli.train``.
        args (argparse.Namespace): Parsed arguments (``args.debug`` turns
            the one-line errors off).
        status (int): Exit status after a user error. Defaults to 1 (2 for
            ``tools/check_data.py``, whose 1 means a broken file).

    Returns:
        Whatever ``fn`` returns.

    Raises:
        SystemExit: With ``status`` after printing a user error (1 after a
            dead DataLoader worker).
    """
    try:
        return fn(args)
    except Exception as e:  # noqa: BLE001  only user errors are caught
        rank = os.environ.get('RANK')
        where = f'[rank {rank}] ' if rank is not None and \
            os.environ.get('WORLD_SIZE', '1') != '1' else ''
        worker = worker_death_message(e)
        if worker is not None:
            # Not a user error: keep the traceback, end with the summary.
            traceback.print_exc()
            print(f'{where}error: {worker}', file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        message = None if debug_requested(args) else user_error_message(e)
        if message is None:
            raise
        print(f'{where}error: {message}', file=sys.stderr, flush=True)
        print(f'{where}(--debug or {DEBUG_ENV}=1 shows the traceback)',
              file=sys.stderr, flush=True)
        raise SystemExit(status) from None
