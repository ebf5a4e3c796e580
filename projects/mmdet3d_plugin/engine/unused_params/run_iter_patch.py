"""DDP's unused-parameter error, told with parameter names.

mmengine 0.10 has no exception hook and the error leaves through
``train_loop.run_iter``, so :func:`wrap_run_iter` shadows the loop's bound
method with one that re-raises DDP's error retold by
:func:`ddp_error_message`; :func:`unwrap_run_iter` restores it.
"""
import functools
from typing import Callable, Dict, List, Optional, Sequence

from ...failures.unused_report import (is_ddp_unused_error,
                                       parse_unused_indices)
from .advice import COST_NOTE, wrapper_config_line

#: Parameter names shown per rank in errors; the rest are counted.
MAX_CRASH_NAMES = 30


def _shortened(names: Sequence[str]) -> str:
    more = len(names) - MAX_CRASH_NAMES
    return (', '.join(names[:MAX_CRASH_NAMES]) +
            (f', ... (+{more})' if more > 0 else ''))


def will_fail_message(rank: int, iteration: int, names: List[str]) -> str:
    """The error logged when DDP will fail on a later iteration.

    Args:
        rank (int): This rank.
        iteration (int): The checked iteration.
        names (list[str]): The parameters that received no gradient.

    Returns:
        str: One line, naming at most :data:`MAX_CRASH_NAMES` of them.
    """
    return (f'DDPUnusedParamHook: rank {rank}: {len(names)} parameters '
            f'received no gradient in iteration {iteration} while DDP runs '
            'with find_unused_parameters=False, so DDP will fail on a later '
            'iteration: ' + _shortened(names))


def ddp_error_message(err: BaseException, names: Optional[Sequence[str]],
                      report: Optional[dict], report_path: Optional[str],
                      cfg=None) -> str:
    """DDP's unused-parameter error, retold with parameter names.

    Args:
        err (BaseException): DDP's "Expected to have finished reduction"
            error.
        names (Sequence[str], optional): The DDP parameter list's names, in
            its order; None shows indices (``#3``).
        report (dict, optional): The hook's report, when a checked
            iteration saw unused parameters; None otherwise.
        report_path (str, optional): Where rank 0 wrote it.
        cfg (Config, optional): The training config, to phrase the fix as
            it wraps its model. Defaults to None.

    Returns:
        str: The message of the error the hook raises instead.
    """
    lines = [
        'DDPUnusedParamHook: DDP stopped because parameters received no '
        'gradient in an earlier iteration while '
        'find_unused_parameters=False.'
    ]
    by_rank: Dict[int, List[int]] = parse_unused_indices(str(err))
    for rank, indices in sorted(by_rank.items()):
        shown = [
            names[i] if i < len(names) else f'#{i}' for i in indices
        ] if names is not None else [f'#{i}' for i in indices]
        lines.append(f'  rank {rank}: ' + _shortened(shown))
    if report is not None:
        lines.append(
            f'  checked iterations {report["iterations_checked"]}: '
            f'unused on all ranks: {report["unused_on_all_ranks"]}; '
            f'unused on some ranks: {report["unused_on_some_ranks"]}')
        lines.append(f'  report: {report_path} (rank 0)')
        lines.append('Fix: ' + report['recommendation'])
    else:
        lines.append(
            '  no checked iteration saw these (the branch that skips '
            'them is data-dependent; widen check_iters/interval to '
            'catch it).')
        lines.append(
            f'Fix: set `{wrapper_config_line(cfg, True)}` (costs '
            f'{COST_NOTE}), or make the skipped branches touch their '
            'parameters and keep it False.')
    return '\n'.join(lines)


def wrap_run_iter(loop, explain: Callable[[BaseException], str],
                  logger) -> Optional[Callable]:
    """Shadow ``loop.run_iter`` so DDP's error leaves with names.

    Args:
        loop (BaseLoop): The runner's train loop.
        explain (Callable[[BaseException], str]): Builds the new message.
        logger (logging.Logger): Where the message is also logged.

    Returns:
        Callable | None: The wrapper set as ``loop.run_iter`` (pass it to
        :func:`unwrap_run_iter`); None when the loop has no ``run_iter``.
    """
    run_iter = getattr(loop, 'run_iter', None)
    if not callable(run_iter):
        return None

    @functools.wraps(run_iter)
    def run_iter_naming_unused(*args, **kwargs):
        try:
            return run_iter(*args, **kwargs)
        except RuntimeError as err:
            if not is_ddp_unused_error(err):
                raise
            message = explain(err)
            logger.error(message)
            raise RuntimeError(message) from err

    loop.run_iter = run_iter_naming_unused
    return run_iter_naming_unused


def unwrap_run_iter(loop, wrapper: Callable) -> None:
    """Undo :func:`wrap_run_iter`, unless something replaced the wrapper.

    Args:
        loop (BaseLoop): The train loop.
        wrapper (Callable): What :func:`wrap_run_iter` returned.
    """
    if vars(loop).get('run_iter') is wrapper:
        del loop.run_iter
