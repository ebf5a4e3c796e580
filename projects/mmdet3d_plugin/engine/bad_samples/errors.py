"""What failed when a sample could not be loaded: the file and the sample,
read from the error itself.

mmdet3d's loading transforms raise where they read (``FileNotFoundError``
from mmengine's file backend, ``ValueError: cannot reshape array of size
6834 into shape (5)`` for a truncated file) and name neither the file nor
the sample. Their frames still hold both: the path in the reader's local
(``pts_filename``, ``pts_file_path``, ``path``, a sweep's ``lidar_points``)
and the sample's info dict (``token``, ``sample_idx``) in the pipeline's.
The errors a broken sample ends a run with, ``BadSampleError`` and
``BadSamplesError``, are in ``failures/exceptions.py`` with the others.
:func:`failed_file` and :func:`failed_sample` read them from the
traceback, innermost frame first; an error raised anywhere else (no file
in its frames) is not a data error and is left as it is.
"""
import os.path as osp
import pickle
from typing import Any, Dict, List, Optional

#: Errors a broken or missing file raises while a sample loads (with a
#: file in their frames, :func:`failed_file`).
DATA_ERRORS = (OSError, EOFError, ValueError, pickle.UnpicklingError)
#: Locals of the readers that hold the path being read.
_PATH_LOCALS = ('pts_filename', 'pts_file_path', 'filepath', 'filename',
                'file_path', 'path')
#: Locals of the pipeline that hold the sample's info dict.
_INFO_LOCALS = ('results', 'input_dict', 'data_info', 'data')
#: What names a sample, from its info.
SAMPLE_KEYS = ('token', 'sample_idx', 'lidar_path')


def _chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and the errors it was raised from or while handling
    (``SafeNuScenesDataset`` raises a missing file again with its sample
    named), outermost first."""
    chain: List[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _frames(exc: BaseException):
    """The frames of the tracebacks of ``exc`` and of the errors it was
    raised from, each traceback innermost first, the deepest error's
    first."""
    frames = []
    for each in _chain(exc):
        tb, own = each.__traceback__, []
        while tb is not None:
            own.append(tb.tb_frame)
            tb = tb.tb_next
        frames = list(reversed(own)) + frames
    return frames


def error_text(exc: BaseException) -> str:
    """``Type: message`` of the deepest error of ``exc``'s chain (the
    reader's own words, e.g. ``ValueError: cannot reshape array of size
    6834 into shape (5)``)."""
    deepest = _chain(exc)[-1]
    return f'{type(deepest).__name__}: {deepest}'


def _is_file(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and (
        osp.sep in value or '.' in osp.basename(value))


def failed_file(exc: BaseException) -> Optional[str]:
    """The file whose reading raised ``exc``, or None when none of its
    frames was reading one.

    Args:
        exc (BaseException): An error raised while a sample loaded.

    Returns:
        str | None: The path, as the reader had it.
    """
    for each in reversed(_chain(exc)):
        if _is_file(getattr(each, 'filename', None)):
            return each.filename
    for frame in _frames(exc):
        local = frame.f_locals
        for name in _PATH_LOCALS:
            if _is_file(local.get(name)):
                return local[name]
        sweep = local.get('sweep')
        if isinstance(sweep, dict):
            path = (sweep.get('lidar_points') or {}).get('lidar_path')
            if _is_file(path):
                return path
    return None


def failed_sample(exc: BaseException) -> Dict[str, Any]:
    """What names the sample whose loading raised ``exc`` (its ``token``,
    ``sample_idx`` and ``lidar_path``, as far as its info had them), read
    from the outermost pipeline frame that held its info; empty when none
    did.

    Args:
        exc (BaseException): An error raised while a sample loaded.

    Returns:
        dict: Some of ``token``, ``sample_idx``, ``lidar_path``.
    """
    named: Dict[str, Any] = {}
    for frame in _frames(exc):
        for name in _INFO_LOCALS:
            info = frame.f_locals.get(name)
            if isinstance(info, dict) and ('token' in info
                                           or 'sample_idx' in info):
                named = sample_name(info)
    return named


def sample_name(info: dict) -> Dict[str, Any]:
    """``token``, ``sample_idx`` and ``lidar_path`` of a sample's info (or
    of its data sample's metainfo), those it has."""
    named = {k: info[k] for k in SAMPLE_KEYS if k in info}
    if 'lidar_path' not in named:
        path = (info.get('lidar_points') or {}).get('lidar_path')
        if path:
            named['lidar_path'] = path
    return named


def describe(file: Optional[str], sample: Dict[str, Any],
             error: str) -> str:
    """``FILE (sample TOKEN, index I): ERROR`` for messages and the log."""
    name = ', '.join(f'{k} {sample[k]}' for k in ('token', 'sample_idx')
                     if k in sample)
    return f'{file or "(file not known)"}' + (f' ({name})' if name else
                                              '') + f': {error}'
