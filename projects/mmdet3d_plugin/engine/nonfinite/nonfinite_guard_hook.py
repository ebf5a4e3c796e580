"""A NaN costs one step, not the run: non-finite updates skipped on every
rank and recorded, and a run that keeps producing them stopped.

``tools/train.py`` adds this hook to every training run
(``engine/run_defaults.py``; ``nonfinite_guard = False`` in a config leaves
it out). How the ranks agree and what a skipped step leaves untouched:
``guard.py`` beside this file.
"""
from typing import Optional

from mmengine.dist import all_gather_object, get_rank, get_world_size
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapper
from mmengine.runner import IterBasedTrainLoop

from mmdet3d.registry import HOOKS
from ...failures.exceptions import NonFiniteStepsError
from .batch_indices import BatchIndices
from .first_module import first_nonfinite_module
from .guard import StepGuard
from .records import (RECORDS_FILE, append_record, batch_samples, describe,
                      loss_terms, nonfinite_terms, sample_tokens)

_META_KEY = 'nonfinite_guard'


@HOOKS.register_module()
class NonFiniteGuardHook(Hook):
    """Skips every update whose gradient is not finite (a NaN or Inf loss
    term on any rank makes it so), on every rank, and records it.

    A skipped update leaves the weights, the optimizer's state (momentum)
    and the model's buffers (BatchNorm running statistics) as they were
    before the iteration; the iteration count and the LR schedule go on.
    Each skipped step is one warning in the log and one entry of
    ``<work_dir>/nonfinite.json``: the iteration, the gradient norm, and
    for the rank(s) whose loss was not finite the loss terms, the dataset
    indices of the batch (from the sampler's order:
    :class:`~.batch_indices.BatchIndices`, whatever the samples hold), its
    samples (``sample_idx``, ``token``, ``lidar_path``), the model
    inputs that were not finite and the first module whose output was not
    (the batch's forward run again with module hooks, only for a bad
    step). Under fp16 with a loss scaler
    an overflow the scaler handles is not counted; a non-finite loss is.

    Args:
        max_consecutive (int): Stop the run (``NonFiniteStepsError`` on
            every rank) after this many skipped steps in a row. Defaults
            to 3.
        max_skipped (int): Stop it when more than this many were skipped
            in all. Defaults to 20.

    Examples:
        >>> custom_hooks = [dict(type='NonFiniteGuardHook',
        ...                      max_consecutive=3, max_skipped=20)]
    """

    priority = 'ABOVE_NORMAL'

    def __init__(self, max_consecutive: int = 3,
                 max_skipped: int = 20) -> None:
        if max_consecutive < 1 or max_skipped < 0:
            raise ValueError(
                'NonFiniteGuardHook: max_consecutive must be >= 1 and '
                f'max_skipped >= 0; got {max_consecutive} and {max_skipped}')
        self.max_consecutive = max_consecutive
        self.max_skipped = max_skipped
        self.in_a_row = 0
        self.skipped = 0
        self.guard: Optional[StepGuard] = None
        self._tokens: Optional[dict] = None
        self._indices: Optional[BatchIndices] = None

    def prepare_dataloader(self, loader) -> None:
        """Follow the dataset indices of ``loader``'s batches
        (:class:`~.batch_indices.BatchIndices`). The resumable train loops
        call it when they build their loader, before its iterator starts;
        for other loops ``before_train`` does.

        Args:
            loader (DataLoader): The train DataLoader.
        """
        self._indices = BatchIndices.install(loader)

    def before_train(self, runner) -> None:
        if self._indices is None:
            loader = getattr(runner.train_loop, 'dataloader', None)
            if loader is not None:
                self.prepare_dataloader(loader)
        wrapper = runner.optim_wrapper
        if not isinstance(wrapper, OptimWrapper):
            runner.logger.warning(
                f'NonFiniteGuardHook: {type(wrapper).__name__} is not one '
                'OptimWrapper (several optimizers?): non-finite steps are '
                'not guarded')
            return
        self.guard = StepGuard(wrapper, runner.model)

    def after_train(self, runner) -> None:
        if self.guard is not None:
            self.guard.unwrap()

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if self.guard is not None:
            self.guard.before_iter()

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        indices = None if self._indices is None else self._indices.take()
        if self.guard is None or not self.guard.skipped:
            if self.guard is not None and self.guard.cycle_starts():
                self.in_a_row = 0
            return
        self.in_a_row += 1
        self.skipped += 1
        if (indices is None and self._indices is not None
                and isinstance(runner.train_loop, IterBasedTrainLoop)):
            # The pass its iterator started when the loop was built: the
            # loop's iteration is its batch number.
            indices = self._indices.batch_of_pass(runner.iter)
        record = self._record(runner, data_batch, outputs, indices)
        if get_rank() == 0:
            append_record(runner.work_dir, record)
        runner.logger.warning(describe(record))
        if (self.in_a_row >= self.max_consecutive
                or self.skipped > self.max_skipped):
            raise NonFiniteStepsError(
                f'NonFiniteGuardHook: {self.in_a_row} non-finite steps in a '
                f'row, {self.skipped} in all (limits: max_consecutive='
                f'{self.max_consecutive}, max_skipped={self.max_skipped}); '
                f'the run stops. Each is in {runner.work_dir}/'
                f'{RECORDS_FILE}; last: {describe(record)}')

    def _record(self, runner, data_batch, outputs, indices) -> dict:
        """This step's record, the same on every rank (one gather: every
        rank skipped the same step)."""
        terms = loss_terms(outputs)
        bad_terms = nonfinite_terms(terms)
        first, bad_inputs = None, []
        if bad_terms or not self.guard.loss_finite():
            model = runner.model
            model = model.module if is_model_wrapper(model) else model
            first, bad_inputs = first_nonfinite_module(model, data_batch)
            self.guard.buffers.restore()
        if self._tokens is None:
            self._tokens = sample_tokens(runner.train_dataloader.dataset)
        mine = dict(rank=get_rank(), nonfinite_terms=bad_terms,
                    loss_terms=terms, dataset_indices=indices,
                    samples=batch_samples(data_batch, self._tokens),
                    nonfinite_inputs=bad_inputs, first_module=first)
        ranks = (all_gather_object(mine) if get_world_size() > 1 else
                 [mine])
        named = [r for r in ranks if r['nonfinite_terms']] or ranks
        return dict(iteration=runner.iter + 1, epoch=runner.epoch,
                    grad_norm=str(self.guard.grad_norm), ranks=named,
                    in_a_row=self.in_a_row, skipped=self.skipped)

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint.setdefault('meta', {})[_META_KEY] = dict(
            in_a_row=self.in_a_row, skipped=self.skipped)

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        saved = checkpoint.get('meta', {}).get(_META_KEY)
        if saved:
            self.in_a_row = int(saved['in_a_row'])
            self.skipped = int(saved['skipped'])
