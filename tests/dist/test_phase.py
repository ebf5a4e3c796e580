"""dist.phase: ``long_phase`` declares a wait for the ``with`` block,
``current_phase`` reads it from any thread, and the previous phase comes
back when the block ends, by return or by exception."""
import threading
import time

import pytest

from projects.mmdet3d_plugin.dist.phase import (Phase, current_phase,
                                                long_phase)


def test_the_phase_is_current_inside_the_block_only():
    assert current_phase() is None
    before = time.monotonic()
    with long_phase('evaluation', 'rank 0 computes ToyMetric', 120) as phase:
        assert current_phase() is phase
        assert (phase.name, phase.detail, phase.timeout) == (
            'evaluation', 'rank 0 computes ToyMetric', 120.0)
        assert type(phase.timeout) is float
        assert before <= phase.since <= time.monotonic()
    assert current_phase() is None


def test_nested_phases_restore_the_outer_one():
    with long_phase('evaluation', 'outer', 60) as outer:
        with long_phase('gather', 'inner', 5) as inner:
            assert current_phase() is inner
        assert current_phase() is outer
    assert current_phase() is None


def test_an_exception_ends_the_phase():
    with long_phase('evaluation', 'outer', 60) as outer:
        with pytest.raises(RuntimeError, match='metric failed'):
            with long_phase('evaluation', 'inner', 5):
                raise RuntimeError('metric failed')
        assert current_phase() is outer
    assert current_phase() is None


def test_another_thread_sees_the_phase():
    seen = []

    def watch():
        seen.append(current_phase())

    with long_phase('evaluation', 'rank 0 computes ToyMetric', 30) as phase:
        watcher = threading.Thread(target=watch)
        watcher.start()
        watcher.join()
    watcher = threading.Thread(target=watch)
    watcher.start()
    watcher.join()
    assert seen == [phase, None]


def test_elapsed_counts_from_since():
    phase = Phase('evaluation', 'rank 0', timeout=10.0, since=100.0)
    assert phase.elapsed(now=112.5) == 12.5
    started = Phase('evaluation', 'rank 0', 10.0, time.monotonic())
    low = time.monotonic() - started.since
    elapsed = started.elapsed()  # without ``now``: the monotonic clock
    assert low <= elapsed <= time.monotonic() - started.since
