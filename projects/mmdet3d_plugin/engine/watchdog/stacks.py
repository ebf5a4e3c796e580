"""Python stacks of a live process, for the hang report.

:func:`dump_all_threads` is ``faulthandler``'s all-thread dump (the same
text a ``SIGABRT`` or ``faulthandler.dump_traceback_later`` prints), with the
thread that runs the Runner marked. :func:`main_thread_frames` gives the
same thread's stack as ``(file, line, function)`` triples, from which
:func:`innermost` picks the frame to name and :func:`in_collective` tells
whether the thread waits for its peers (its innermost frame is in
``torch.distributed``, DDP, mmengine's ``dist`` helpers or a DDP backward)
or is busy with something of its own.
"""
import faulthandler
import os
import sys
import sysconfig
import tempfile
import traceback
from typing import List, Optional, Sequence, Tuple

from ...constants import REPO_ROOT

#: One stack frame: (file, line, function).
Frame = Tuple[str, int, str]

#: Path parts of code that waits for the other ranks: collectives, DDP's
#: reducer (its gradient all-reduce finishes inside autograd's backward)
#: and mmengine's dist wrappers.
COLLECTIVE_PARTS = (
    os.sep + os.path.join('torch', 'distributed') + os.sep,
    os.sep + os.path.join('torch', 'nn', 'parallel') + os.sep,
    os.sep + os.path.join('torch', 'autograd') + os.sep,
    os.sep + os.path.join('mmengine', 'dist') + os.sep,
)
_STDLIB = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_paths()['stdlib'],
              sysconfig.get_paths()['platstdlib']})


def dump_all_threads(main_ident: Optional[int] = None) -> str:
    """``faulthandler.dump_traceback(all_threads=True)`` as text.

    Args:
        main_ident (int, optional): ``threading.get_ident()`` of the thread
            to mark as the one running the Runner. Defaults to None.

    Returns:
        str: The dump, most recent call first within each thread.
    """
    with tempfile.TemporaryFile('w+') as f:
        faulthandler.dump_traceback(f, all_threads=True)
        f.flush()
        f.seek(0)
        text = f.read()
    if main_ident is not None:
        # faulthandler names threads by their ident in hex, zero-padded.
        marker = f'0x{main_ident:0{2 * 8}x}'
        text = '\n'.join(
            line + '  <- runs the Runner'
            if line.startswith(('Thread ', 'Current thread ')) and
            marker in line else line for line in text.splitlines())
    return text


def main_thread_frames(main_ident: int) -> List[Frame]:
    """The stack of thread ``main_ident``, outermost call first.

    Args:
        main_ident (int): ``threading.get_ident()`` of the thread.

    Returns:
        list[tuple[str, int, str]]: (file, line, function) per frame; empty
        if the thread is gone.
    """
    frame = sys._current_frames().get(main_ident)
    if frame is None:
        return []
    return [(f.filename, f.lineno or 0, f.name)
            for f in traceback.extract_stack(frame)]


def format_frames(frames: Sequence[Frame]) -> str:
    """Frames as a Python traceback body (``File "x", line N, in f``)."""
    summaries = traceback.StackSummary.from_list(
        [(file, line, name, None) for file, line, name in frames])
    return ''.join(summaries.format())


def _is_stdlib(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_STDLIB) and \
        'site-packages' not in filename


def innermost(frames: Sequence[Frame]) -> Optional[Frame]:
    """The innermost frame outside Python's standard library.

    A thread blocked in ``time.sleep`` or ``queue.get`` is named by the code
    that called it, not by ``threading.py``.
    """
    for frame in reversed(frames):
        if not _is_stdlib(frame[0]):
            return frame
    return frames[-1] if frames else None


def in_collective(frames: Sequence[Frame]) -> bool:
    """Whether the stack waits for peers: its :func:`innermost` frame is in
    :data:`COLLECTIVE_PARTS` (not merely called through them, as under
    torch elastic's ``record`` or DDP's forward)."""
    frame = innermost(frames)
    return frame is not None and any(part in frame[0]
                                     for part in COLLECTIVE_PARTS)


def short_path(filename: str) -> str:
    """``filename`` relative to the checkout or to ``site-packages``."""
    path = os.path.realpath(filename)
    marker = os.sep + 'site-packages' + os.sep
    if marker in path:
        return path.split(marker, 1)[1]
    root = str(REPO_ROOT) + os.sep
    if path.startswith(root):
        return path[len(root):]
    return filename


def describe_frame(frame: Optional[Frame]) -> str:
    """``file:line in function``, the file shortened by :func:`short_path`.
    """
    if frame is None:
        return '<no Python frame>'
    return f'{short_path(frame[0])}:{frame[1]} in {frame[2]}'
