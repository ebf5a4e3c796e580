"""Each rank's uncaught exception, recorded in its torch elastic error file.

:func:`record_errors` wraps a rank's entry point with torch's ``record``
and the plugin's one error handler
(:class:`~projects.mmdet3d_plugin.failures.RankErrorHandler`), which
also starts the rank's ``rank_info.json`` (:mod:`.rank_info`) and names
the rank's work and log folders in the file.
"""
import functools
from typing import Callable

from torch.distributed.elastic.multiprocessing.errors import record

from .error_files import RankErrorHandler
from .rank_info import current_rank_info, start_rank_info, stop_rank_info


def record_errors(fn: Callable) -> Callable:
    """Wrap a rank's entry point so its uncaught exception is recorded.

    ``torch.distributed.elastic.multiprocessing.errors.record`` with
    :class:`~projects.mmdet3d_plugin.failures.RankErrorHandler`: the
    exception is written to ``TORCHELASTIC_ERROR_FILE`` (set by torchrun
    and the Slurm launchers) and raised on; without the variable, nothing
    is written.

    Args:
        fn (callable): The entry point, e.g. ``launch.train``.

    The rank's ``rank_info.json`` sampler is stopped and joined when
    ``fn`` ends, after the error file is written.

    Returns:
        callable: ``fn`` wrapped.
    """
    recorded = record(fn, error_handler=RankErrorHandler(
        start=start_rank_info, context=current_rank_info))

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return recorded(*args, **kwargs)
        finally:
            stop_rank_info()

    return run
