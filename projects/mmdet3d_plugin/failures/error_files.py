"""torch elastic error files: written by each rank, read by the report.

torchrun sets ``TORCHELASTIC_ERROR_FILE`` for every rank; a rank whose
entry point is wrapped by torch's ``record`` writes its uncaught exception
there as JSON (``{"message": {"message": "Type: text", "extraInfo":
{"py_callstack": ..., "timestamp": "<seconds>"}}}``) and torchrun shows it
in its summary. :func:`record_errors` uses ``record`` with
:class:`RankErrorHandler`, which writes the same format plus, under
``extraInfo.mmdet3d_plugin``, the rank, host, pid, the time to the
microsecond, the exception's type and message and the innermost user
frame. :func:`read_error_file` reads any torch elastic error file (also
those of other programs, and the string-message form).
"""
import json
import os
import os.path as osp
import time
import traceback
from typing import Any, Callable, Dict, Optional

from torch.distributed.elastic.multiprocessing.errors import (ErrorHandler,
                                                              record)

from ..fileio.atomic import atomic_write
from .frames import raising_frame, user_frame
from .rank_info import (ERROR_FILE_ENV, current_rank_info, rank_identity,
                        start_rank_info)

#: Key under ``extraInfo`` that holds the plugin's fields.
EXTRA_KEY = 'mmdet3d_plugin'


def error_file_data(message: str,
                    callstack: str = '',
                    extra: Optional[Dict[str, Any]] = None,
                    timestamp: Optional[float] = None) -> Dict[str, Any]:
    """The JSON torch elastic reads from a rank's error file.

    Args:
        message (str): ``Type: text`` of the error.
        callstack (str): The formatted traceback. Defaults to ''.
        extra (dict, optional): Fields stored under
            ``extraInfo.mmdet3d_plugin``.
        timestamp (float, optional): Seconds since the epoch. Defaults to
            now.

    Returns:
        dict: ``{"message": {"message", "extraInfo": {"py_callstack",
        "timestamp", ...}}}``.
    """
    now = time.time() if timestamp is None else timestamp
    info = dict(py_callstack=callstack, timestamp=str(int(now)))
    if extra is not None:
        info[EXTRA_KEY] = dict(extra, time=now)
    return dict(message=dict(message=message, extraInfo=info))


class RankErrorHandler(ErrorHandler):
    """torch elastic's error handler, naming the rank, host and frame.

    ``initialize`` also starts the rank's ``rank_info.json`` (see
    :mod:`.rank_info`) when an error file is set.
    """

    def initialize(self) -> None:
        super().initialize()
        start_rank_info()

    def record_exception(self, e: BaseException) -> None:
        path = os.environ.get(ERROR_FILE_ENV)
        if not path:
            return
        callstack = ''.join(
            traceback.format_exception(type(e), e, e.__traceback__))
        message = f'{type(e).__name__}: {e}'
        frame = user_frame(callstack)
        raised = raising_frame(callstack)
        context = current_rank_info()
        extra = dict(
            rank_identity(),
            type=type(e).__name__,
            text=str(e),
            frame=str(frame) if frame else None,
            raised_at=str(raised) if raised else None,
            work_dir=context.get('work_dir'),
            log_dir=context.get('log_dir'))
        data = error_file_data(message, callstack, extra)
        try:
            atomic_write(json.dumps(data), path, durable=False)
        except OSError as err:
            print(f'RankErrorHandler: cannot write the error file {path} '
                  f'({err}); the failure report will lack this rank\'s '
                  'error', flush=True)


def record_errors(fn: Callable) -> Callable:
    """Wrap a rank's entry point so its uncaught exception is recorded.

    ``torch.distributed.elastic.multiprocessing.errors.record`` with
    :class:`RankErrorHandler`: the exception is written to
    ``TORCHELASTIC_ERROR_FILE`` (set by torchrun and the Slurm launchers)
    and raised on; without the variable, nothing is written.

    Args:
        fn (callable): The entry point, e.g. ``launch.train``.

    Returns:
        callable: ``fn`` wrapped.
    """
    return record(fn, error_handler=RankErrorHandler())


def read_error_file(path: str) -> Optional[Dict[str, Any]]:
    """Read a torch elastic error file.

    Args:
        path (str): The file.

    Returns:
        dict | None: ``message`` (``Type: text``), ``callstack``,
        ``time`` (seconds; the plugin's precise time, else the file's
        modification time), ``error_code`` (set by torchrun when it copies
        the file), ``extra`` (the plugin's fields, empty for other
        writers) and ``info`` (other writers' ``extraInfo`` fields, such as
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
