"""Python stacks of a live process, for the hang report.

:func:`dump_all_threads` is ``faulthandler``'s all-thread dump (the same
text a ``SIGABRT`` or ``faulthandler.dump_traceback_later`` prints), with the
thread that runs the Runner marked. :func:`main_thread_frames` gives the
same thread's stack as frames (:class:`~.frames.Frame`), from which
:func:`~.frames.innermost` picks the frame to name and
:func:`in_collective` tells whether the thread waits for its peers (its
innermost frame is in ``torch.distributed``, DDP, mmengine's ``dist``
helpers or a DDP backward) or is busy with something of its own.
"""
import faulthandler
import os
import sys
import tempfile
import traceback
from typing import List, Optional, Sequence

from .frames import Frame, innermost

#: Path parts of code that waits for the other ranks: collectives, DDP's
#: reducer (its gradient all-reduce finishes inside autograd's backward)
#: and mmengine's dist wrappers.
COLLECTIVE_PARTS = (
    os.sep + os.path.join('torch', 'distributed') + os.sep,
    os.sep + os.path.join('torch', 'nn', 'parallel') + os.sep,
    os.sep + os.path.join('torch', 'autograd') + os.sep,
    os.sep + os.path.join('mmengine', 'dist') + os.sep,
)


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
        list[Frame]: One per frame; empty if the thread is gone.
    """
    frame = sys._current_frames().get(main_ident)
    if frame is None:
        return []
    return [Frame(f.filename, f.lineno or 0, f.name)
            for f in traceback.extract_stack(frame)]


def format_frames(frames: Sequence[Frame]) -> str:
    """Frames as a Python traceback body (``File "x", line N, in f``)."""
    summaries = traceback.StackSummary.from_list(
        [(file, line, name, None) for file, line, name in frames])
    return ''.join(summaries.format())


def in_collective(frames: Sequence[Frame]) -> bool:
    """Whether the stack waits for peers: its :func:`innermost` frame is in
    :data:`COLLECTIVE_PARTS` (not merely called through them, as under
    torch elastic's ``record`` or DDP's forward)."""
    frame = innermost(frames)
    return frame is not None and any(part in frame[0]
                                     for part in COLLECTIVE_PARTS)
