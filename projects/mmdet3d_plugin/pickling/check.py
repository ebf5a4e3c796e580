"""Pickle an object as a spawn worker receives it, and report.

:func:`check_picklable` pickles with ``ForkingPickler``, unpickles the bytes
in a freshly spawned interpreter and reports size, times and, on failure,
the offending attribute paths (:func:`~.audit.find_unpicklable`);
``tools/check_pickle.py`` runs it on the dataset of a config.
"""
import multiprocessing
import pickle
import time
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from typing import Any, List, Optional

from .audit import describe_type, find_unpicklable, format_error


@dataclass
class PickleReport:
    """Outcome of :func:`check_picklable`.

    Args:
        ok (bool): Whether the object pickled (and loaded, if checked).
        num_bytes (int): Size of the pickle; 0 on failure.
        dump_seconds (float): Time to pickle.
        load_seconds (float): Time to unpickle in a fresh spawned process,
            or None when not checked.
        offenders (list[str]): Output of :func:`find_unpicklable`.
        error (str): The error, one line; empty on success.
    """
    ok: bool
    num_bytes: int = 0
    dump_seconds: float = 0.0
    load_seconds: Optional[float] = None
    offenders: List[str] = field(default_factory=list)
    error: str = ''


def _load_in_child(conn, payload: bytes) -> None:
    """Spawned process: unpickle ``payload``, send back seconds or error."""
    try:
        start = time.perf_counter()
        pickle.loads(payload)
        conn.send(('ok', time.perf_counter() - start))
    except BaseException as exc:  # report everything to the parent
        conn.send(('error', format_error(exc)))
    finally:
        conn.close()


def check_picklable(obj: Any,
                    load_in_spawn: bool = True,
                    max_depth: int = 12,
                    time_limit: float = 30.0) -> PickleReport:
    """Pickle ``obj`` as DataLoader workers receive it, and audit failures.

    Pickles with :class:`multiprocessing.reduction.ForkingPickler` (what
    ``spawn`` and ``forkserver`` use), then optionally unpickles the bytes
    in a freshly spawned interpreter, which also catches classes that the
    worker cannot import.

    Args:
        obj (Any): Object to check, typically a dataset.
        load_in_spawn (bool): Also unpickle in a spawned process.
            Defaults to True.
        max_depth (int): See :func:`find_unpicklable`. Defaults to 12.
        time_limit (float): See :func:`find_unpicklable`. Defaults to 30.

    Returns:
        PickleReport: Size, times and offending paths.
    """
    start = time.perf_counter()
    try:
        payload = bytes(ForkingPickler.dumps(obj, pickle.HIGHEST_PROTOCOL))
    except Exception as exc:
        seconds = time.perf_counter() - start
        offenders = find_unpicklable(obj,
                                     max_depth=max_depth,
                                     time_limit=time_limit)
        if not offenders:
            offenders = [
                f'<object> ({describe_type(obj)}): '
                f'{format_error(exc)}'
            ]
        return PickleReport(ok=False,
                            dump_seconds=seconds,
                            offenders=offenders,
                            error=format_error(exc))
    seconds = time.perf_counter() - start
    report = PickleReport(ok=True,
                          num_bytes=len(payload),
                          dump_seconds=seconds)
    if load_in_spawn:
        ctx = multiprocessing.get_context('spawn')
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_load_in_child, args=(child, payload))
        proc.start()
        child.close()
        try:
            status, value = parent.recv()
        except EOFError:
            status, value = 'error', (
                f'the spawned process exited with code {proc.exitcode} '
                'before reporting')
        proc.join()
        if status == 'ok':
            report.load_seconds = value
        else:
            report.ok = False
            report.error = f'unpickling in a spawned process failed: {value}'
    return report


def format_report(report: PickleReport, name: str) -> str:
    """Human-readable lines for a :class:`PickleReport`.

    Args:
        report (PickleReport): What :func:`check_picklable` returned.
        name (str): What was checked, e.g. the dataset class name.

    Returns:
        str: Several lines, ending with 'OK' or 'FAILED'.
    """
    lines = [f'{name}: pickled for a spawn worker']
    if report.num_bytes:
        lines.append(f'  pickled size : {report.num_bytes:,} bytes '
                     f'({report.num_bytes / 2**20:.2f} MiB)')
    lines.append(f'  pickle time  : {report.dump_seconds:.3f} s')
    if report.load_seconds is not None:
        lines.append(f'  unpickle time: {report.load_seconds:.3f} s '
                     '(in a spawned process)')
    if report.error and not report.offenders:
        lines.append(f'  error        : {report.error}')
    if report.offenders:
        lines.append('  cannot pickle:')
        lines.extend(f'    {line}' for line in report.offenders)
    lines.append('OK' if report.ok else 'FAILED')
    return '\n'.join(lines)
