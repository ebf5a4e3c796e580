"""Stack frames as the reports name them: the one frame type, the one
shortened path and the one test of what is standard library or user code.

A frame is ``(file, line, function)``, from a live stack (the watchdog's
:mod:`.stacks`) or read back from a traceback's text, as torch elastic
stores it in a rank's error file (``py_callstack``). User code is
everything outside the Python installation (the standard library and
``site-packages``), plus mmdet3d and mmdet: the frames of torch, mmengine
and mmcv are skipped, so a report points at the line a user can change.
"""
import os
import os.path as osp
import re
import sysconfig
from typing import List, NamedTuple, Optional, Sequence

from ..constants import REPO_ROOT

#: Installed packages whose frames count as user code.
USER_PACKAGES = ('mmdet3d', 'mmdet')
_FRAME_RE = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)',
    re.M)
_TRACEBACK_HEAD = 'Traceback (most recent call last):'
_PACKAGE_DIRS = ('site-packages', 'dist-packages')
_NOT_EXCEPTION = ('Traceback (most recent call last)', 'During handling of',
                  'The above exception was', '[rank')


class Frame(NamedTuple):
    """One frame: ``File "file", line N, in function``.

    A tuple, so ``(file, line, function)`` triples work wherever a frame
    does; ``str(frame)`` is ``short/path.py:N in function``.
    """
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


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def is_stdlib(path: str) -> bool:
    """Whether a frame's file is Python's standard library.

    Args:
        path (str): The file as the frame names it.

    Returns:
        bool: True under the interpreter's ``stdlib`` / ``platstdlib``
        (installed packages excluded) and for frozen modules
        (``<frozen runpy>``).
    """
    if path.startswith('<frozen'):
        return True
    if path.startswith('<') or _package_part(path) is not None:
        return False
    real = osp.realpath(path)
    return any(_under(real, d) for d in _STDLIB)


def is_user_file(path: str) -> bool:
    """Whether a frame's file is user, plugin, mmdet3d or mmdet code.

    Args:
        path (str): The file as the frame names it.

    Returns:
        bool: False for the standard library, installed packages other
        than :data:`USER_PACKAGES` and pseudo files (``<frozen runpy>``).
    """
    if path.startswith('<'):
        return False
    inside = _package_part(path)
    if inside is not None:
        return inside.split('/', 1)[0] in USER_PACKAGES
    return not is_stdlib(path)


def short_path(path: str) -> str:
    """``torch/x.py`` for installed files, a path relative to the checkout
    (or, outside it, to the working directory) for files under them, else
    ``path``.

    Args:
        path (str): A frame's file.

    Returns:
        str: The shortened path.
    """
    inside = _package_part(path)
    if inside is None and not path.startswith('<'):
        inside = _package_part(osp.realpath(path))
    if inside is not None:
        return inside
    if path.startswith('<'):
        return path
    real = osp.realpath(path)
    for root in (str(REPO_ROOT), os.getcwd()):
        root = osp.realpath(root)
        if _under(real, root) and real != root:
            return osp.relpath(real, root)
    return path


def describe_frame(frame: Optional[Sequence]) -> str:
    """``file:line in function`` (the file shortened), or ``<no Python
    frame>``.

    Args:
        frame (Frame | tuple, optional): ``(file, line, function)``.

    Returns:
        str: The description.
    """
    if frame is None:
        return '<no Python frame>'
    return str(Frame(*frame))


def innermost(frames: Sequence[Sequence]) -> Optional[Frame]:
    """The innermost frame outside Python's standard library.

    A thread blocked in ``time.sleep`` or ``queue.get`` is named by the code
    that called it, not by ``threading.py``.

    Args:
        frames (Sequence[Frame]): A stack, outermost first.

    Returns:
        Frame | None: None for an empty stack; the innermost frame when
        every frame is standard library.
    """
    for frame in reversed(frames):
        if not is_stdlib(frame[0]):
            return Frame(*frame)
    return Frame(*frames[-1]) if frames else None


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
