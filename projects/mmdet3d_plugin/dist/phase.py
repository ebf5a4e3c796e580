"""Long waits a rank declares, so that the watchdog counts them against
their own timeout.

While rank 0 computes the metrics, the other ranks wait for it on the
metric's own group: no iteration finishes anywhere, yet every rank is where
it should be. The metric declares that phase with its ``dist_wait_timeout``
(:func:`long_phase`); ``DistWatchdogHook`` reads :func:`current_phase` from
its thread and ends the run only when a phase outlasts its own timeout,
naming the phase.
"""
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional


@dataclass(frozen=True)
class Phase:
    """A declared long wait of this process.

    Args:
        name (str): What runs, e.g. ``'evaluation'``.
        detail (str): Where, for reports, e.g. ``'rank 0 computes
            SafeNuScenesMetric'``.
        timeout (float): Seconds the phase may last.
        since (float): ``time.monotonic()`` when it began.
    """
    name: str
    detail: str
    timeout: float
    since: float

    def elapsed(self, now: Optional[float] = None) -> float:
        """Seconds since the phase began."""
        return (time.monotonic() if now is None else now) - self.since


_lock = threading.Lock()
_current: Optional[Phase] = None


def current_phase() -> Optional[Phase]:
    """The phase this process is in, or None (read from any thread)."""
    with _lock:
        return _current


@contextmanager
def long_phase(name: str, detail: str, timeout: float) -> Iterator[Phase]:
    """Declare a long wait of this process for the ``with`` block.

    Args:
        name (str): What runs, e.g. ``'evaluation'``.
        detail (str): Where, e.g. ``'rank 0 computes SafeNuScenesMetric'``.
        timeout (float): Seconds it may last.

    Yields:
        Phase: The declared phase.
    """
    global _current
    phase = Phase(name, detail, float(timeout), time.monotonic())
    with _lock:
        previous, _current = _current, phase
    try:
        yield phase
    finally:
        with _lock:
            _current = previous
