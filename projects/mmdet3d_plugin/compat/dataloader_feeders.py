"""A DataLoader iterator's queue threads end with its shutdown.

torch's ``_MultiProcessingDataLoaderIter._shutdown_workers`` closes each
worker's index queue (a ``multiprocessing.Queue``). The queue's feeder
thread (``QueueFeederThread``, started by its first ``put``) then finds
its sentinel and ends a moment later, on its own: the shutdown does not
wait for it (``cancel_join_thread``). Until it ends, the process holds a
thread of an iterator that is gone. At a run's end it is still there when
the tool returns: seen at the end of 12 of 350 finished 2-rank
iteration-based runs, on a loaded 2-core machine (torch 2.1.2). It ends
harmlessly, but a run that returned should hold nothing of its own, and
the next iterator of a non-persistent loader forks its workers while it
ends.

Wrapped, the shutdown joins the feeder of each queue it closed, within
torch's own bound for the workers' join (``MP_STATUS_CHECK_INTERVAL``,
5 s; the feeder has nothing left to send but its queue's last markers). A
shutdown that did nothing (a second call, or one at interpreter exit,
where torch leaves everything to the exit) joins nothing. Remove when
torch joins the feeders itself.
"""
import functools
import time

from torch.utils.data import dataloader as torch_dataloader

#: Marks the wrapped ``_shutdown_workers``, so wrapping happens once.
_WRAPPED = '_joins_queue_feeders'


def _queue_feeders(iterator) -> list:
    """``(queue, feeder thread)`` of each of ``iterator``'s queues this
    process has put to (its workers' index queues; its result queue when
    a pin-memory thread was woken through it)."""
    queues = list(getattr(iterator, '_index_queues', None) or [])
    queues.append(getattr(iterator, '_worker_result_queue', None))
    feeders = []
    for queue in queues:
        thread = getattr(queue, '_thread', None)
        if thread is not None:
            feeders.append((queue, thread))
    return feeders


def join_queue_feeders_at_shutdown() -> None:
    """Make each DataLoader iterator's shutdown join the feeder threads of
    the queues it closed (a second call does nothing more)."""
    iterator_cls = torch_dataloader._MultiProcessingDataLoaderIter
    shutdown = iterator_cls._shutdown_workers
    if getattr(shutdown, _WRAPPED, False):
        return

    @functools.wraps(shutdown)
    def _shutdown_workers(self):
        feeders = _queue_feeders(self)
        shutdown(self)
        deadline = (time.monotonic() +
                    torch_dataloader._utils.MP_STATUS_CHECK_INTERVAL)
        for queue, thread in feeders:
            if getattr(queue, '_closed', False):
                thread.join(max(deadline - time.monotonic(), 0))

    setattr(_shutdown_workers, _WRAPPED, True)
    iterator_cls._shutdown_workers = _shutdown_workers
