"""A DataLoader iterator's shutdown joins its queues' feeder threads
(``compat/dataloader_feeders.py``), in process, with torch's real
iterator and 2 forked workers.

Each feeder here takes 0.2 s to close each end of its pipe, as one does
when the process is busy: without the fix, the end of a shutdown finds
both feeders alive every time.
"""
import threading
import time
from multiprocessing import connection

import pytest
from torch.utils.data import DataLoader

from projects.mmdet3d_plugin.compat.fixes import apply_fixes


def _feeders() -> list:
    return [t for t in threading.enumerate()
            if t.name == 'QueueFeederThread']


@pytest.fixture
def slow_feeder_ends(monkeypatch):
    apply_fixes()
    close = connection.Connection._close

    def slow_close(self, *args):
        if threading.current_thread().name == 'QueueFeederThread':
            time.sleep(0.2)
        close(self, *args)

    monkeypatch.setattr(connection.Connection, '_close', slow_close)


@pytest.mark.parametrize('how', ['dropped', 'exhausted'])
def test_no_feeder_thread_outlives_the_iterators_shutdown(slow_feeder_ends,
                                                          how):
    loader = DataLoader(list(range(24)), batch_size=4, num_workers=2)
    assert not _feeders()
    for _ in range(2):
        iterator = iter(loader)
        next(iterator)
        feeders = _feeders()
        assert len(feeders) == 2  # each worker's index queue's
        if how == 'dropped':  # a run's end: the last reference goes
            del iterator
        else:  # an epoch's end: StopIteration shuts the workers down
            assert len(list(iterator)) == 5
        assert not [t for t in feeders if t.is_alive()]
    assert not _feeders()
