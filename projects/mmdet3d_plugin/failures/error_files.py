"""torch elastic error files: the one handler that writes them, the reader.

torchrun sets ``TORCHELASTIC_ERROR_FILE`` for every rank; what a rank
writes there is what torchrun's "Root Cause" summary and the plugin's
failure report print for it. The layout is torch elastic's own
(``{"message": {"message": "Type: text", "extraInfo": {"py_callstack":
..., "timestamp": "<seconds>"}}}``). :class:`RankErrorHandler` is torch
elastic's :class:`ErrorHandler`, subclassed as its docstring invites, and
the only one in the plugin:

* ``failures.record_errors`` gives it to torch's ``record`` around a rank's
  entry point, for the rank's uncaught exception;
* ``DistWatchdogHook`` calls it from its thread for the hang it found (a
  :class:`DescribedError`: the message as written, the stuck ranks' stacks
  as the traceback, since the Runner thread is stuck and has none).

Either way it adds, under ``extraInfo.mmdet3d_plugin``, the rank, host,
pid, the time to the microsecond, the exception's type and message and
the innermost user frame. :func:`read_error_file` reads any torch elastic
error file (also those of other programs, and the string-message form).
"""
import json
import os
import os.path as osp
import time
import traceback
from typing import Any, Callable, Dict, Mapping, Optional

from torch.distributed.elastic.multiprocessing.errors import ErrorHandler

from ..fileio.atomic import atomic_write
from .frames import raising_frame, user_frame
from .identity import rank_identity

#: Variable torch elastic (torchrun) sets to each rank's error file.
ERROR_FILE_ENV = 'TORCHELASTIC_ERROR_FILE'
#: Key under ``extraInfo`` that holds the plugin's fields.
EXTRA_KEY = 'mmdet3d_plugin'


class DescribedError(RuntimeError):
    """An error that brings its own error-file entry.

    For failures found outside the thread that failed (a hang found by the
    watchdog's thread): there is no traceback of the moment, so the error
    says what to write.

    Args:
        message (str): Written as the error's message as it is (no ``Type:``
            prefix).
        callstack (str): Written as the traceback.
        error_info (dict, optional): Fields for ``extraInfo`` beside
            ``py_callstack`` (JSON-serialisable). Defaults to None.
    """

    def __init__(self,
                 message: str,
                 callstack: str,
                 error_info: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(message)
        self.callstack = callstack
        self.error_info = dict(error_info or {})


def error_file_data(message: str,
                    callstack: str = '',
                    extra: Optional[Dict[str, Any]] = None,
                    timestamp: Optional[float] = None,
                    info: Optional[Mapping[str, Any]] = None
                    ) -> Dict[str, Any]:
    """The JSON torch elastic reads from a rank's error file.

    Args:
        message (str): ``Type: text`` of the error.
        callstack (str): The formatted traceback. Defaults to ''.
        extra (dict, optional): Fields stored under
            ``extraInfo.mmdet3d_plugin``.
        timestamp (float, optional): Seconds since the epoch. Defaults to
            now.
        info (dict, optional): Other fields of ``extraInfo`` (a
            :class:`DescribedError`'s ``error_info``). Defaults to None.

    Returns:
        dict: ``{"message": {"message", "extraInfo": {"py_callstack",
        "timestamp", ...}}}``.
    """
    now = time.time() if timestamp is None else timestamp
    fields = dict(info or {})
    fields.update(py_callstack=callstack, timestamp=str(int(now)))
    if extra is not None:
        fields[EXTRA_KEY] = dict(extra, time=now)
    return dict(message=dict(message=message, extraInfo=fields))


class RankErrorHandler(ErrorHandler):
    """torch elastic's error handler, naming the rank, host and frame.

    Args:
        start (callable, optional): Called by :meth:`initialize` (torch's
            ``record`` calls it before the entry point runs), e.g. to start
            the rank's ``rank_info.json``. Defaults to None.
        context (callable, optional): Returns more fields for
            ``extraInfo.mmdet3d_plugin``, read when an error is recorded
            (``work_dir``, ``log_dir``). Defaults to None.

    Examples:
        >>> from torch.distributed.elastic.multiprocessing.errors import (
        ...     record)
        >>> main = record(main, error_handler=RankErrorHandler())
    """

    def __init__(self,
                 start: Optional[Callable[[], Any]] = None,
                 context: Optional[Callable[[], Mapping[str, Any]]] = None
                 ) -> None:
        self.start = start
        self.context = context

    def initialize(self) -> None:
        """torch's set-up (``faulthandler``), then ``start``."""
        super().initialize()
        if self.start is not None:
            self.start()

    def record_exception(self, e: BaseException) -> None:
        """Write ``e`` to the error file, if torchrun gave one.

        Args:
            e (BaseException): The error; a :class:`DescribedError` is
                written as it describes itself.
        """
        path = os.environ.get(ERROR_FILE_ENV)
        if not path:
            return
        if isinstance(e, DescribedError):
            message, callstack, info = str(e), e.callstack, e.error_info
        else:
            message = f'{type(e).__name__}: {e}'
            callstack = ''.join(
                traceback.format_exception(type(e), e, e.__traceback__))
            info = None
        frame = user_frame(callstack)
        raised = raising_frame(callstack)
        context = dict(self.context() or {}) if self.context else {}
        extra = dict(
            rank_identity(),
            type=type(e).__name__,
            text=str(e),
            frame=str(frame) if frame else None,
            raised_at=str(raised) if raised else None,
            work_dir=context.get('work_dir'),
            log_dir=context.get('log_dir'))
        data = error_file_data(message, callstack, extra, info=info)
        try:
            atomic_write(json.dumps(data), path, durable=False)
        except OSError as err:
            print(f'RankErrorHandler: cannot write the error file {path} '
                  f'({err}); the failure report will lack this rank\'s '
                  'error', flush=True)


def read_error_file(path: str) -> Optional[Dict[str, Any]]:
    """Read a torch elastic error file.

    Args:
        path (str): The file.

    Returns:
        dict | None: ``message`` (``Type: text``), ``callstack``,
        ``time`` (seconds; the plugin's precise time, else the file's
        modification time), ``error_code`` (set by torchrun when it copies
        the file), ``extra`` (the plugin's fields, empty for other
        writers) and ``info`` (the other ``extraInfo`` fields, such as
        ``DistWatchdogHook``'s ``stuck_ranks`` and ``hang_report``); None
        when the file is missing or not JSON.
    """
    try:
        with open(path) as f:
            data = json.load(f)
        mtime = osp.getmtime(path)
    except (OSError, ValueError):
        return None
    message = data.get('message', '') if isinstance(data, dict) else ''
    if isinstance(message, dict):
        info = message.get('extraInfo') or {}
        extra = info.get(EXTRA_KEY) or {}
        others = {k: v for k, v in info.items()
                  if k not in ('py_callstack', 'timestamp', EXTRA_KEY)}
        return dict(
            message=str(message.get('message', '')),
            callstack=str(info.get('py_callstack', '')),
            time=float(extra.get('time', mtime)),
            error_code=message.get('errorCode'),
            extra=extra,
            info=others)
    return dict(message=str(message), callstack='', time=mtime,
                error_code=None, extra={}, info={})
