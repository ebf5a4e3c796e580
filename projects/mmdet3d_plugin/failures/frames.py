"""The frame of a traceback worth showing: the innermost one in user code.

User code is everything outside the Python installation (the standard
library and ``site-packages``), plus mmdet3d and mmdet: the frames of
torch, mmengine and mmcv are skipped, so the report points at the line a
user can change. The tracebacks are read as text, as torch elastic stores
them in a rank's error file (``py_callstack``).
"""
import os
import os.path as osp
import re
import sysconfig
from typing import List, NamedTuple, Optional

#: Installed packages whose frames count as user code.
USER_PACKAGES = ('mmdet3d', 'mmdet')
_FRAME_RE = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)',
    re.M)
_TRACEBACK_HEAD = 'Traceback (most recent call last):'
_PACKAGE_DIRS = ('site-packages', 'dist-packages')


class Frame(NamedTuple):
    """One ``File "...", line N, in f`` line of a traceback."""
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f'{short_path(self.file)}:{self.line} in {self.function}'


def _stdlib_dirs() -> List[str]:
    paths = sysconfig.get_paths()
    return sorted({osp.realpath(paths[k]) for k in ('stdlib', 'platstdlib')
                   if paths.get(k)})


_STDLIB = _stdlib_dirs()


def _package_part(path: str) -> Optional[str]:
    """The part of ``path`` after ``site-packages/``, if it has one."""
    parts = path.replace('\\', '/').split('/')
    for i, part in enumerate(parts):
        if part in _PACKAGE_DIRS:
            return '/'.join(parts[i + 1:])
    return None


def is_user_file(path: str) -> bool:
    """Whether a traceback's file is user, plugin, mmdet3d or mmdet code.

    Args:
        path (str): The file as the traceback names it.

    Returns:
        bool: False for the standard library, installed packages other
        than :data:`USER_PACKAGES` and pseudo files (``<frozen runpy>``).
    """
    if path.startswith('<'):
        return False
    inside = _package_part(path)
    if inside is not None:
        return inside.split('/', 1)[0] in USER_PACKAGES
    real = osp.realpath(path)
    return not any(real == d or real.startswith(d + os.sep) for d in _STDLIB)


def short_path(path: str) -> str:
    """``mmdet3d/models/x.py`` for installed files, a path relative to the
    working directory for files under it, else ``path``."""
    inside = _package_part(path)
    if inside is not None:
        return inside
    try:
        rel = osp.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith('..') else rel


def last_traceback(text: str) -> List[Frame]:
    """The frames of the last traceback in ``text``, outermost first.

    The last one is the error that ended the process, or, for an error a
    DataLoader worker caught, the worker's ``Original Traceback``.

    Args:
        text (str): A formatted traceback (``traceback.format_exc()``).

    Returns:
        list[Frame]: Empty when ``text`` holds no traceback.
    """
    start = text.rfind(_TRACEBACK_HEAD)
    if start < 0:
        return []
    return [
        Frame(m['file'], int(m['line']), m['func'])
        for m in _FRAME_RE.finditer(text, start)
    ]


def user_frame(text: str) -> Optional[Frame]:
    """The innermost frame of the last traceback that is user code."""
    for frame in reversed(last_traceback(text)):
        if is_user_file(frame.file):
            return frame
    return None


def raising_frame(text: str) -> Optional[Frame]:
    """The innermost frame of the last traceback (where it was raised)."""
    frames = last_traceback(text)
    return frames[-1] if frames else None


_NOT_EXCEPTION = ('Traceback (most recent call last)', 'During handling of',
                  'The above exception was', '[rank')


def exception_lines(text: str) -> List[str]:
    """The exception lines of a formatted traceback, chained ones included.

    Python prints each exception of a chain (``raise ... from``, an error
    while handling another) as ``Type: message`` at the start of a line,
    source lines and frames indented; the lines of a multi-line message
    also start at the line's beginning.

    Args:
        text (str): A formatted traceback.

    Returns:
        list[str]: Unindented, non-empty lines that are not traceback
        headers, in order.
    """
    return [
        line.rstrip() for line in text.splitlines()
        if line.strip() and not line[0].isspace()
        and not line.startswith(_NOT_EXCEPTION)
    ]
