"""Run as one DataLoader worker on one core does."""
import contextlib
from typing import Iterator

import torch
from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def as_one_worker() -> Iterator[None]:
    """One torch thread, as PyTorch's DataLoader sets in each worker, and
    one BLAS thread (numpy), so that a transform measures what one worker
    on one core of a busy node does; both put back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api='blas'):
            yield
    finally:
        torch.set_num_threads(threads)
