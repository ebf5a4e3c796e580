"""Names the parameters that DDP will complain about, before it does.

The hook only; what it runs on (marks, autograd traversal, gather, report,
the ``run_iter`` patch) is in :mod:`..unused_params`.
"""
import logging
import os.path as osp
from typing import Dict, List, Optional

from mmengine.dist import get_dist_info, master_only
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from torch.nn.parallel import DistributedDataParallel

from mmdet3d.registry import HOOKS
from ...dist.durations import positive_seconds
from ...fileio.atomic import atomic_write_json
from ...failures.unused_report import REPORT_FILE
from .summary import UnusedParamSummary
from .advice import build_report
from .run_iter_patch import (ddp_error_message, unwrap_run_iter,
                             will_fail_message, wrap_run_iter)
from .table import describe, format_table
from .gather import gather_unused, report_group
from .marks import mark_gradients, reachable_params, should_sync


def _check_int(name: str, value, minimum: int, example: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or \
            value < minimum:
        raise ValueError(
            f'DDPUnusedParamHook: {name} must be an int >= {minimum}, got '
            f'{value!r} ({type(value).__name__}); e.g. {example}')


@HOOKS.register_module()
class DDPUnusedParamHook(Hook):
    """Report parameters that receive no gradient, per rank, before DDP dies.

    With ``find_unused_parameters=False``, DDP fails one iteration after a
    parameter went without a gradient ("Expected to have finished reduction
    in the prior iteration ..."), naming only parameter indices. In its
    checked iterations this hook marks every trainable parameter that gets a
    gradient (``Tensor.register_post_accumulate_grad_hook``, registered for
    the iteration and removed after it, so it is right whatever
    ``zero_grad``, gradient accumulation or AMP do, and costs nothing
    outside its window), gathers the unused sets of all ranks and
    classifies them:

    - unused on all ranks: dead weight; freeze or remove it;
    - unused on some ranks (or in some iterations): rank- or data-dependent
      branches; they need ``find_unused_parameters=True``, or the branch
      must touch its parameters.

    Rank 0 logs a table grouped by module and writes
    ``<log_dir>/unused_params.json`` after every check, so the report exists
    when DDP dies on the next iteration. The hook also re-raises DDP's error
    with the parameter names, and recommends the cheapest correct setting
    both ways (turn the option on, or off when nothing went unused).
    Parameters with ``requires_grad=False`` are not checked.

    With ``find_unused_parameters=True``, DDP gives zero gradients to
    everything its outputs depend on, also to parameters that feed only
    outputs left out of the loss (a head whose loss is logged but not
    summed); those would look used, and turning the option off would then
    fail. In checked iterations the hook therefore also follows the autograd
    graph of the loss (``parse_losses`` of the model's own outputs, before
    DDP's wrapping) and counts only the parameters it reaches.

    The unused sets travel over a separate gloo group of their own, so they
    never mix with DDP's pending gradient reductions. A rank whose DDP
    reduction is waiting for a peer that skipped parameters never reaches the
    gather; the others then give up after ``gather_timeout`` seconds, log
    their own names and report only those from then on.

    Args:
        check_iters (int): Check the first ``check_iters`` iterations of the
            run (extended, with gradient accumulation, until an iteration
            that synchronises gradients was checked). Defaults to 3.
        interval (int): Afterwards, check every ``interval`` iterations;
            0 never. Defaults to 0.
        out_file (str): Report file, relative to ``runner.log_dir``.
            Defaults to 'unused_params.json'.
        group_depth (int): Module path components that group the table rows.
            Defaults to 3.
        max_names (int): Names (and shapes) shown per table row.
            Defaults to 3.
        gather_timeout (float): Seconds to wait for the other ranks'
            reports. Defaults to 60.

    Examples:
        >>> custom_hooks = [
        ...     dict(type='DDPUnusedParamHook', check_iters=3, interval=1000)
        ... ]
    """

    # No ordering needs: the marks are set in backward, inside train_step.
    priority = 'NORMAL'

    def __init__(self,
                 check_iters: int = 3,
                 interval: int = 0,
                 out_file: str = REPORT_FILE,
                 group_depth: int = 3,
                 max_names: int = 3,
                 gather_timeout: float = 60.0) -> None:
        _check_int('check_iters', check_iters, 0, 'check_iters=3')
        _check_int('interval', interval, 0, 'interval=1000, or 0 for never')
        if check_iters == 0 and interval == 0:
            raise ValueError(
                'DDPUnusedParamHook: check_iters=0 and interval=0 would never '
                'check anything; set check_iters >= 1 (first iterations) '
                'and/or interval >= 1 (sparse checks), or drop the hook')
        if not isinstance(out_file, str) or not out_file:
            raise ValueError(
                'DDPUnusedParamHook: out_file must be a non-empty file name, '
                f"got {out_file!r}; e.g. out_file='{REPORT_FILE}'")
        _check_int('group_depth', group_depth, 1, 'group_depth=3')
        _check_int('max_names', max_names, 1, 'max_names=3')
        self.check_iters = check_iters
        self.interval = interval
        self.out_file = out_file
        self.group_depth = group_depth
        self.max_names = max_names
        self.gather_timeout = positive_seconds('DDPUnusedParamHook',
                                               'gather_timeout',
                                               gather_timeout,
                                               'gather_timeout=60')
        self.summary: Optional[UnusedParamSummary] = None
        self.report: Optional[dict] = None
        self.report_path: Optional[str] = None
        self._handles: Optional[list] = None
        self._patched = None
        self._group = None
        self._loss_reaches: Optional[set] = None
        self._follow_error: Optional[str] = None
        self._follow_disabled = False

    # -- setup -----------------------------------------------------------

    def before_train(self, runner) -> None:
        """Collect the trainable parameters, DDP settings and a gather group.

        Args:
            runner (Runner): The runner of the training process.
        """
        wrapped = runner.model
        model = wrapped.module if is_model_wrapper(wrapped) else wrapped
        ddps = [
            m for m in wrapped.modules()
            if isinstance(m, DistributedDataParallel)
            and hasattr(m, 'find_unused_parameters')
        ]
        self._ddp = wrapped if isinstance(
            wrapped, DistributedDataParallel) else None
        ignored = getattr(self._ddp, 'parameters_to_ignore', None) or set()
        named = [(n, p) for n, p in model.named_parameters()
                 if p.requires_grad and n not in ignored]
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._has_ddp = bool(ddps)
        self._find_unused = any(m.find_unused_parameters for m in ddps)
        self._static_graph = any(
            getattr(m, 'static_graph', False) for m in ddps)
        self._cfg = getattr(runner, 'cfg', None)
        self._rank, self._world_size = get_dist_info()
        self._start_iter = runner.iter
        self._sync_checked = False
        self.report_path = osp.join(runner.log_dir, self.out_file)
        if not self._params:
            runner.logger.warning(
                'DDPUnusedParamHook: the model has no trainable parameters; '
                'nothing to check')
            self.summary = None
            return
        self.summary = UnusedParamSummary(
            self._names, [tuple(p.shape) for p in self._params],
            self._world_size)
        self._group = report_group(self._names, self._world_size,
                                   self.gather_timeout, runner.logger)
        self._install_crash_report(runner)

    def _install_crash_report(self, runner) -> None:
        """Re-raise DDP's unused-parameter error with names.

        mmengine 0.10 has no exception hook and the error leaves through
        ``train_loop.run_iter``, so the loop's bound method is shadowed for
        the length of training (restored in :meth:`after_train`).
        """
        if self._patched is not None:
            return
        loop = runner.train_loop
        wrapper = wrap_run_iter(loop, self.explain_ddp_error, runner.logger)
        if wrapper is not None:
            self._patched = (loop, wrapper)

    def after_train(self, runner) -> None:
        """Remove leftover marks and restore ``train_loop.run_iter``.

        Args:
            runner (Runner): The runner of the training process.
        """
        self._remove_marks()
        if self._patched is not None:
            unwrap_run_iter(*self._patched)
            self._patched = None

    # -- checks ----------------------------------------------------------

    def _is_checked(self, runner) -> bool:
        done = runner.iter - self._start_iter
        if done < self.check_iters:
            return True
        if self.check_iters and not self._sync_checked:
            return True  # with accumulation: reach the synchronised one
        return self.interval > 0 and (runner.iter + 1) % self.interval == 0

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        """Mark parameters as they receive gradients, in checked iterations.

        Args:
            runner (Runner): The runner of the training process.
            batch_idx (int): Index of the batch in the epoch.
            data_batch (dict | tuple | list, optional): The batch.
        """
        if self.summary is None or not self._is_checked(runner):
            return
        self._iter_syncs = should_sync(runner.optim_wrapper)
        self._used, self._handles = mark_gradients(self._params)
        self._loss_reaches = None
        if self._ddp is not None and self._find_unused and \
                not self._follow_disabled:
            self._handles.append(
                self._ddp.module.register_forward_hook(
                    self._follow_loss, with_kwargs=True))

    def _follow_loss(self, module, args, kwargs, output) -> None:
        """Forward hook: which parameters the model's loss depends on."""
        parse_losses = getattr(module, 'parse_losses', None)
        if kwargs.get('mode') != 'loss' or not isinstance(output, dict) \
                or parse_losses is None:
            return
        try:
            loss, _ = parse_losses(output)
        except Exception as err:  # a diagnostic must not stop training
            self._follow_error = f'{type(err).__name__}: {err}'
            return
        reached = reachable_params(loss)
        self._loss_reaches = reached if self._loss_reaches is None \
            else self._loss_reaches | reached

    def _remove_marks(self) -> None:
        if self._handles is not None:
            for handle in self._handles:
                handle.remove()
            self._handles = None

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs=None) -> None:
        """Gather and classify this iteration's unused parameters, report.

        Args:
            runner (Runner): The runner of the training process.
            batch_idx (int): Index of the batch in the epoch.
            data_batch (dict | tuple | list, optional): The batch.
            outputs (dict, optional): Outputs of ``train_step``.
        """
        if self._handles is None:
            return
        self._remove_marks()
        self._sync_checked |= self._iter_syncs
        if self._follow_error is not None:
            runner.logger.warning(
                'DDPUnusedParamHook: could not follow the loss graph '
                f'({self._follow_error}); parameters that feed only outputs '
                'outside the loss will count as used, since DDP with '
                'find_unused_parameters=True sends them zero gradients')
            self._follow_error, self._follow_disabled = None, True
        if self._loss_reaches is not None:
            # Zero gradients that DDP made up for outputs outside the loss
            # do not count.
            for i, param in enumerate(self._params):
                if id(param) not in self._loss_reaches:
                    self._used[i] = 0
            self._loss_reaches = None
        local = [i for i, used in enumerate(self._used) if not used]
        if (local and self._has_ddp and self._iter_syncs
                and not self._find_unused and not self._static_graph):
            runner.logger.error(
                will_fail_message(self._rank, runner.iter,
                                  [self._names[i] for i in local]))
        unused_by_rank = self._gather(runner, local)
        self.summary.add_check(runner.iter, unused_by_rank)
        previous = self.report
        self.report = build_report(
            self.summary,
            ddp=self._has_ddp,
            find_unused=self._find_unused,
            static_graph=self._static_graph,
            cfg=self._cfg)
        self._publish(runner, previous)

    def _gather(self, runner, local: List[int]) -> Dict[int, List[int]]:
        if self._group is None:
            return {self._rank: local}
        try:
            return gather_unused(self._group, self._used, self._world_size)
        except RuntimeError as err:
            self._group = None
            runner.logger.warning(
                'DDPUnusedParamHook: gathering the other ranks\' unused '
                f'parameters failed in iteration {runner.iter} '
                f'({type(err).__name__}: {str(err)[:200]}); from now on rank '
                f'{self._rank} reports only its own. Usual cause: another '
                'rank waits inside DDP for gradients this rank skipped.')
            return {self._rank: local}

    @master_only
    def _publish(self, runner, previous: Optional[dict]) -> None:
        atomic_write_json(self.report, self.report_path)
        keys = ('unused_on_all_ranks', 'unused_on_some_ranks', 'config_line')
        if previous is not None and all(previous[k] == self.report[k]
                                        for k in keys):
            return
        text = describe(
            self.report,
            format_table(self.summary, self.group_depth, self.max_names))
        level = logging.WARNING if (self.summary.any_unused or
                                    self.report['config_line']) \
            else logging.INFO
        runner.logger.log(level, text + f'\nReport: {self.report_path}')

    # -- crash -----------------------------------------------------------

    def explain_ddp_error(self, err: BaseException) -> str:
        """DDP's unused-parameter error, retold with parameter names.

        Args:
            err (BaseException): DDP's "Expected to have finished reduction"
                error.

        Returns:
            str: The message of the error the hook raises instead.
        """
        names = self._names if self._ddp is not None else None
        known = self.report is not None and self.summary is not None and \
            self.summary.any_unused
        return ddp_error_message(err, names, self.report if known else None,
                                 self.report_path, self._cfg)
