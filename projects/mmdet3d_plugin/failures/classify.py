"""How a failed rank failed: its exit, its error text, cause or victim.

:func:`classify` tells ranks that failed on their own (an exception, a
signal other than the launcher's SIGTERM, a hang found by
``DistWatchdogHook``) from victims (ranks stopped by the launcher, or that
lost a connection to a dead peer), and looks the cause up in the table of
:mod:`projects.mmdet3d_plugin.failures.causes`.
"""
import re
from typing import List, Optional, Tuple

from ..constants import HANG_EXIT_CODE, HANG_MESSAGE_PREFIX
from .causes import (EXCEPTION, HANG, UNKNOWN, VICTIM_SIGNALS, Cause,
                     find_cause, is_peer_death, signal_name)
from .frames import exception_lines
from .collect import RankFailure

#: Longest message shown in the printed report (the JSON has all of it).
MAX_MESSAGE = 160
#: ``[/path/to/pair.cc:553] `` in gloo's and NCCL's messages.
_SOURCE_LOCATION = re.compile(r'\[[^\]\s]+\.(cc|cpp|h|hpp):\d+\]\s*')
_STUCK_RE = (
    re.compile(r'stuck[^.;\n]*?\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)'),
    re.compile(r'\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)[^.;\n]*?'
               r'stuck'),
    re.compile(r'\branks?\s*:?\s*(\d+(?:\s*(?:,|and)\s*\d+)*)'),
)


def exit_text(exit_code: Optional[int]) -> str:
    """``'SIGKILL (exit code -9)'``, ``'exit code 1'`` or ``'exit code
    unknown'``."""
    if exit_code is None:
        return 'exit code unknown'
    name = signal_name(exit_code)
    if name is not None:
        return f'{name} (exit code {exit_code})'
    if exit_code == HANG_EXIT_CODE:
        return f'exit code {exit_code} (ended by DistWatchdogHook)'
    return f'exit code {exit_code}'


def failure_exit_text(failure: RankFailure) -> str:
    """:func:`exit_text`, saying so when a rank that recorded an error was
    stopped by the launcher while it exited (its own exit code is lost)."""
    name = signal_name(failure.exit_code)
    if failure.message and name in VICTIM_SIGNALS:
        return (f'raised an exception, then got {name} while exiting (exit '
                f'code {failure.exit_code})')
    return exit_text(failure.exit_code)


def error_text(failure: RankFailure) -> str:
    """The failure's message plus the exceptions chained to it (a
    DataLoader worker's death arrives as the cause of another error)."""
    return '\n'.join([failure.message] +
                     exception_lines(failure.callstack))


def caused_by(failure: RankFailure, cause: Optional[Cause]) -> Optional[str]:
    """The chained exception line that matched ``cause``, when the
    failure's own message did not."""
    if cause is None or not cause.patterns or any(
            p.search(failure.message) for p in cause.patterns):
        return None
    return next((line for line in exception_lines(failure.callstack)
                 if any(p.search(line) for p in cause.patterns)), None)


def classify(failure: RankFailure) -> Tuple[str, Optional[Cause]]:
    """Whether a rank is a cause or a victim, and its table entry.

    Args:
        failure (RankFailure): One failed rank.

    Returns:
        tuple[str, Cause | None]: ``'cause'`` or ``'victim'``; the cause
        is None for victims and for ranks that left nothing (no error, no
        exit code).
    """
    if failure.message:
        # The recorded error decides; a signal came after it (torchrun
        # stops a rank that is slow to exit with SIGTERM, then SIGKILL).
        cause = find_cause(error_text(failure))
        if cause is None and failure.exit_code == HANG_EXIT_CODE:
            cause = HANG
        if cause is not None:
            return 'cause', cause
        if is_peer_death(failure.message):
            return 'victim', None
        return 'cause', EXCEPTION
    name = signal_name(failure.exit_code)
    if name in VICTIM_SIGNALS:
        return 'victim', None
    if failure.exit_code is None:
        return 'victim', None
    return 'cause', find_cause('', failure.exit_code) or UNKNOWN


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines()
                 if line.strip()), '')


def short_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """The first line, without a C++ source location, cut after its first
    sentence when it is long."""
    line = _SOURCE_LOCATION.sub('', _first_line(text))
    if len(line) <= limit:
        return line
    end = line.find('. ', 40)
    if 0 < end < limit:
        return line[:end + 1]
    return line[:limit] + ' ...'


def stuck_ranks(message: str) -> List[int]:
    """The ranks a ``DistWatchdogHook`` hang message calls stuck."""
    start = message.find(HANG_MESSAGE_PREFIX)
    line = message[start + len(HANG_MESSAGE_PREFIX):] if start >= 0 \
        else message
    for pattern in _STUCK_RE:
        match = pattern.search(line)
        if match:
            return sorted({int(n) for n in re.findall(r'\d+', match[1])})
    return []
