"""Evaluate on rank 0 while the other ranks wait on a gloo group of its own.

mmengine's ``BaseMetric.evaluate`` collects the results, lets rank 0 compute
the metrics and then broadcasts them on the default process group: the
other ranks sit in that broadcast for as long as rank 0 evaluates. On GPUs
the default group is NCCL, whose watchdog ends the job once a collective
waits longer than ``env_cfg.dist_cfg.timeout`` (30 minutes by default), so
a long evaluation (the nuScenes val split, in stock mmdet3d) kills the
training run. :class:`Rank0EvaluateMixin` moves that wait onto a gloo group
with its own timeout.
"""
import logging
from typing import Any, Dict, Optional, Tuple

from torch import Tensor
from mmengine.dist import (broadcast_object_list, collect_results,
                           get_default_group, get_dist_info)
from mmengine.logging import print_log
from mmengine.structures import BaseDataElement

from ...dist.phase import long_phase
from ...dist.durations import positive_seconds
from ...dist.groups import side_group
from ...dist.teardown import at_run_end

#: Default of ``dist_wait_timeout``: 4 hours.
DEFAULT_DIST_WAIT_TIMEOUT = 4 * 3600.0

# Gloo groups made for the wait: timeout -> (default group, wait group).
# One per timeout and default group; every rank evaluates the same metrics
# in the same order, so every rank creates (or reuses) the same groups.
_WAIT_GROUPS: Dict[float, Tuple[Any, Any]] = {}


def rank0_wait_group(timeout: float):
    """The gloo group the ranks wait on while rank 0 evaluates.

    Created on the first call for a timeout (a collective call: every rank
    of the default group must make it, in the same order) and reused while
    the default group lives; a new default group (after
    ``destroy_process_group``) gets a new one.

    Args:
        timeout (float): Collective timeout of the group in seconds.

    Returns:
        ProcessGroup: A gloo group of all ranks.
    """
    world = get_default_group()
    cached = _WAIT_GROUPS.get(timeout)
    if cached is not None and cached[0] is world:
        return cached[1]
    group = side_group(timeout)
    _WAIT_GROUPS[timeout] = (world, group)
    # Forgotten when the run ends, so the group goes with its Runner.
    at_run_end(_forget_wait_groups)
    print_log(
        f'evaluation: while rank 0 computes the metrics, the other ranks '
        f'wait on a gloo group with a {timeout:g} s timeout, not on the '
        'default process group', logger='current')
    return group


def _forget_wait_groups(together: bool) -> None:
    """Drop the cached wait groups (the run's groups end with it)."""
    _WAIT_GROUPS.clear()


class Rank0EvaluateMixin:
    """``BaseMetric.evaluate`` with the wait for rank 0 on a gloo group.

    Put it before the metric class among the bases. ``evaluate`` collects
    the results as ``BaseMetric.evaluate`` does (``collect_device``,
    ``collect_dir``); then, while rank 0 runs ``compute_metrics``, the
    other ranks wait for its metrics on a gloo group whose timeout is
    ``dist_wait_timeout``, not in a collective of the default (NCCL) group,
    so no evaluation, however long, trips the job's collective timeout
    (``env_cfg.dist_cfg.timeout``). If rank 0 fails, every rank raises
    instead of waiting. Without ``torch.distributed``, or with one
    process, it computes the metrics directly.

    Args:
        *args: Positional arguments of the metric.
        dist_wait_timeout (float): Seconds the other ranks wait for rank 0
            to evaluate. Defaults to 14400 (4 hours).
        **kwargs: Keyword arguments of the metric.

    Examples:
        >>> @METRICS.register_module()
        ... class MyMetric(Rank0EvaluateMixin, BaseMetric):
        ...     ...
        >>> val_evaluator = dict(type='MyMetric', dist_wait_timeout=7200)
    """

    def __init__(self,
                 *args,
                 dist_wait_timeout: float = DEFAULT_DIST_WAIT_TIMEOUT,
                 **kwargs) -> None:
        self.dist_wait_timeout = positive_seconds(
            type(self).__name__, 'dist_wait_timeout (how long the other '
            'ranks wait for rank 0 to evaluate)', dist_wait_timeout,
            'dist_wait_timeout=14400 (4 hours) in the evaluator config')
        super().__init__(*args, **kwargs)

    def evaluate(self, size: int) -> dict:
        """Collect the results, evaluate on rank 0, share the metrics.

        Args:
            size (int): Length of the whole dataset; the padding the
                sampler added is dropped, as in ``BaseMetric.evaluate``.

        Returns:
            dict: The metrics, on every rank, with the metric's prefix.

        Raises:
            RuntimeError: On ranks other than 0, when rank 0 failed to
                compute the metrics (rank 0 raises its own error).
        """
        if len(self.results) == 0:
            print_log(
                f'{type(self).__name__} got empty `self.results`. Please '
                'ensure that the processed results are properly added into '
                '`self.results` in `process` method.',
                logger='current',
                level=logging.WARNING)
        if self.collect_device == 'cpu':
            results = collect_results(
                self.results, size, self.collect_device,
                tmpdir=self.collect_dir)
        else:
            results = collect_results(self.results, size,
                                      self.collect_device)
        self.results.clear()

        rank, world_size = get_dist_info()
        if world_size == 1:
            return self._prefixed_metrics(results)
        # Every rank is here (the collection above was collective).
        group = rank0_wait_group(self.dist_wait_timeout)
        message: list = [None]
        error: Optional[BaseException] = None
        name = type(self).__name__
        detail = (f'rank 0 computes {name}.compute_metrics' if rank == 0 else
                  f'waits for rank 0 to compute {name}.compute_metrics')
        # DistWatchdogHook counts this phase against dist_wait_timeout.
        with long_phase('evaluation', detail, self.dist_wait_timeout):
            if rank == 0:
                try:
                    message[0] = ('ok', self._prefixed_metrics(results))
                except Exception as exc:  # shared, then raised below
                    error = exc
                    message[0] = ('error', f'{type(exc).__name__}: {exc}')
            broadcast_object_list(message, src=0, group=group)
        if error is not None:
            raise error
        status, payload = message[0]
        if status != 'ok':
            raise RuntimeError(
                f'{type(self).__name__}: rank 0 failed to compute the '
                f'metrics ({payload}); see rank 0\'s log for the traceback.')
        return payload

    def _prefixed_metrics(self, results: list) -> dict:
        """``compute_metrics`` on the collected results, keys prefixed."""
        metrics = self.compute_metrics(_to_cpu(results))
        if self.prefix:
            metrics = {'/'.join((self.prefix, k)): v
                       for k, v in metrics.items()}
        return metrics


def _to_cpu(data: Any) -> Any:
    """Tensors and data elements moved to CPU, as ``BaseMetric`` does."""
    if isinstance(data, (Tensor, BaseDataElement)):
        return data.to('cpu')
    if isinstance(data, list):
        return [_to_cpu(d) for d in data]
    if isinstance(data, tuple):
        return tuple(_to_cpu(d) for d in data)
    if isinstance(data, dict):
        return {k: _to_cpu(v) for k, v in data.items()}
    return data
