"""Checkpoint and pointer files that are either complete or absent.

mmengine 0.10.7 writes checkpoints with ``open(path, 'wb').write(...)``
(``LocalBackend.put``) and the ``last_checkpoint`` pointer with
``open(path, 'w')``: a run killed during either write leaves a truncated
file under the real name, and ``--resume`` then fails to load it. Here:

* :func:`atomic_write` writes to a hidden temporary file in the same folder,
  fsyncs it, and renames it onto the target with ``os.replace`` (atomic on
  POSIX and Windows); SIGTERM and SIGINT that arrive during the write are
  held back until the file is complete, then delivered as usual.
* :func:`atomic_write_json` is the ``--json`` report of the doctor, the
  data check and the pipeline profiler, written the same way.
* :class:`AtomicLocalBackend` is mmengine's ``LocalBackend`` with ``put`` and
  ``put_text`` going through :func:`atomic_write`; it is registered as the
  file backend ``'atomic_local'`` (``backend_args=dict(backend=
  'atomic_local')``).
* :func:`remove_stale_temporaries` deletes the temporary files that a
  SIGKILL during a write leaves behind.

:class:`~projects.mmdet3d_plugin.engine.hooks.AtomicCheckpointHook` uses
them for checkpoints, and :func:`~projects.mmdet3d_plugin.engine.
atomic_checkpoint.atomic_checkpoint_hook.use_atomic_checkpoints` makes it
the checkpoint hook of a config (the plugin's tools call it).
"""
import contextlib
import json
import os
import os.path as osp
import re
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator, List, Union

from mmengine.fileio import LocalBackend, register_backend

#: Name of the registered file backend.
ATOMIC_BACKEND = 'atomic_local'
#: Marker in the names of temporary files: ``.<name>.<TMP_MARK><random>``.
TMP_MARK = 'atomic-tmp-'
_TMP_RE = re.compile(r'^\..+\.' + re.escape(TMP_MARK) + r'[^.]+$')
_DEFERRED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def _deferred_signals() -> Iterator[None]:
    """Hold back SIGTERM and SIGINT inside the block; deliver them after.

    Only the main thread can install signal handlers; elsewhere the block
    runs unprotected (the temporary file still keeps the target intact).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: List[int] = []
    previous = {}
    for signum in _DEFERRED_SIGNALS:
        previous[signum] = signal.signal(
            signum, lambda num, _frame: received.append(num))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(received):
            os.kill(os.getpid(), signum)


def atomic_write(data: Union[bytes, str],
                 path: Union[str, Path],
                 encoding: str = 'utf-8',
                 durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see all of it or nothing.

    The data goes to ``.<name>.atomic-tmp-XXXX`` in the same folder, is
    fsynced, and replaces ``path`` in one rename; the folder is fsynced so
    the rename survives a power cut. If anything fails, the temporary file
    is removed and ``path`` keeps its previous content.

    Args:
        data (bytes | str): Content; ``str`` is encoded with ``encoding``.
        path (str | Path): Target file. Missing parent folders are created.
        encoding (str): Encoding of ``str`` data. Defaults to 'utf-8'.
        durable (bool): fsync the file and the folder. False keeps the
            all-or-nothing rename without waiting for the disk, for reports
            rewritten often. Defaults to True.
    """
    if isinstance(data, str):
        data = data.encode(encoding)
    path = osp.abspath(os.fspath(path))
    folder, name = osp.split(path)
    os.makedirs(folder, exist_ok=True)
    with _deferred_signals():
        fd, tmp = tempfile.mkstemp(
            prefix=f'.{name}.{TMP_MARK}', dir=folder)
        try:
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
            raise
        if durable:
            _fsync_dir(folder)


def atomic_write_json(data: Any, path: Union[str, Path]) -> None:
    """Write ``data`` as indented JSON (and a final newline) to ``path``
    with :func:`atomic_write`: a tool's ``--json`` report, whole or absent,
    its folder created. Not fsynced (a report is rewritten, not resumed
    from).

    Args:
        data (Any): JSON-serialisable object.
        path (str | Path): Target file.
    """
    atomic_write(json.dumps(data, indent=2) + '\n', path, durable=False)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(folder: str) -> None:
    if os.name != 'posix':
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def is_temporary(name: str) -> bool:
    """Whether a file name is one of :func:`atomic_write`'s temporaries."""
    return bool(_TMP_RE.match(osp.basename(name)))


def remove_stale_temporaries(folder: Union[str, Path]) -> List[str]:
    """Delete temporary files left in ``folder`` by killed writers.

    Call it when no other process writes into ``folder`` (e.g. rank 0 at the
    start of training).

    Args:
        folder (str | Path): Folder to clean. A missing folder is fine.

    Returns:
        list[str]: Paths of the removed files.
    """
    folder = os.fspath(folder)
    if not osp.isdir(folder):
        return []
    removed = []
    for name in sorted(os.listdir(folder)):
        path = osp.join(folder, name)
        if is_temporary(name) and osp.isfile(path):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
                removed.append(path)
    return removed


@register_backend(ATOMIC_BACKEND, force=True)
class AtomicLocalBackend(LocalBackend):
    """mmengine's ``LocalBackend`` whose writes are atomic.

    Examples:
        >>> default_hooks = dict(
        ...     checkpoint=dict(
        ...         type='CheckpointHook',
        ...         backend_args=dict(backend='atomic_local')))
    """

    def put(self, obj: bytes, filepath: Union[str, Path]) -> None:
        """Write bytes to ``filepath`` atomically (see :func:`atomic_write`).

        Args:
            obj (bytes): Data to be written.
            filepath (str | Path): Target file.
        """
        atomic_write(obj, filepath)

    def put_text(self,
                 obj: str,
                 filepath: Union[str, Path],
                 encoding: str = 'utf-8') -> None:
        """Write text to ``filepath`` atomically.

        Args:
            obj (str): Text to be written.
            filepath (str | Path): Target file.
            encoding (str): Encoding of the text. Defaults to 'utf-8'.
        """
        atomic_write(obj, filepath, encoding=encoding)
