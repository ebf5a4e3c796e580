"""Runner that counts gradient accumulation in ``auto_scale_lr`` and
checkpoints activations with the plugin's implementation."""
from typing import Dict, Optional, Union

from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapper, OptimWrapperDict, _ParamScheduler
from mmengine.runner import Runner
from mmdet3d.registry import RUNNERS

from ..box_convention.migrate import unconverted_note
from ..config.optim_wrapper import is_multi_wrapper, validate_optim_wrapper
from ..datasets.heap import frozen_heap_worker_init
from ..datasets.wrappers import share_index_lists
from .activation_checkpointing.checkpointing import (
    turn_on_activation_checkpointing)
from .activation_checkpointing.gradient_coverage_hook import (
    GradientCoverageHook)
from .amp import (check_amp_supported, warn_accumulation_with_batchnorm,
                  warn_bf16_on_cpu)
from .resume.accumulation_resume_hook import AccumulationResumeHook
from .lr_scaling import lr_scale_factor


def _accumulative_counts(wrapper: OptimWrapper) -> int:
    # mmengine 0.10.7 keeps the count only in this attribute (no public
    # accessor); it is read, never written.
    return int(getattr(wrapper, '_accumulative_counts', 1))


def _is_built(schedulers) -> bool:
    if isinstance(schedulers, dict):
        return False if 'type' in schedulers else any(
            _is_built(s) for s in schedulers.values())
    if isinstance(schedulers, list):
        return any(_is_built(s) for s in schedulers)
    return isinstance(schedulers, _ParamScheduler)


@RUNNERS.register_module()
class PluginRunner(Runner):
    """mmengine ``Runner`` with accumulation-aware LR scaling and early AMP
    checks.

    Differences from :class:`mmengine.runner.Runner`, everything else is
    inherited unchanged:

    - :meth:`scale_lr` scales by ``world_size x batch_size x
      accumulative_counts / base_batch_size`` (mmengine leaves out the
      accumulation) and logs the factors and the resulting LR;
    - :meth:`build_optim_wrapper` validates the accumulation / loss scale
      values, stops with a clear message when the AMP mode cannot run on this
      machine (:func:`check_amp_supported`), warns with the measured
      slowdown when bfloat16 would be emulated on this CPU
      (:func:`warn_bf16_on_cpu`), and warns once when gradients are
      accumulated through BatchNorm layers;
    - with ``accumulative_counts > 1`` an :class:`AccumulationResumeHook` is
      registered, so resuming inside an accumulation cycle is exact (in
      single-process runs; distributed runs get a warning);
    - :meth:`build_dataloader` moves the index lists of dataset wrappers
      (``CBGSDataset.sample_indices``) into shared memory
      (:func:`share_index_lists`) before any worker starts, and its
      workers freeze what they inherited from the cyclic collector
      (:func:`frozen_heap_worker_init`);
    - the config's ``activation_checkpointing`` (mmengine's key: module
      names; or ``'auto'``, preset ``'activation_checkpointing'``) is
      carried out by the plugin's non-reentrant checkpointing
      (``engine/activation_checkpointing``), which keeps the gradients,
      BatchNorm statistics and random draws of training without it, when
      the Runner is built; mmengine's reentrant wrapper never sees the
      key, and a :class:`GradientCoverageHook` checks the first backward;
    - :meth:`load_checkpoint` (``load_from``, ``--resume``,
      ``tools/test.py``) warns in one line when the checkpoint's boxes are
      in mmdet3d 0.x's convention, with the command that converts it
      (``box_convention/``).

    :func:`projects.mmdet3d_plugin.load_config` selects it
    (``runner_type='PluginRunner'``); build it with mmdet3d's ``RUNNERS``.

    Examples:
        >>> from mmdet3d.registry import RUNNERS
        >>> cfg = load_config('configs/my_config.py')
        >>> runner = RUNNERS.build(cfg)
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        counts = self._single_wrapper_counts()
        if counts > 1 and not any(
                isinstance(h, AccumulationResumeHook) for h in self.hooks):
            self.register_hook(AccumulationResumeHook(counts))
        self._checkpoint_activations()

    def _checkpoint_activations(self) -> None:
        """Checkpoint what ``activation_checkpointing`` names, with the
        plugin's implementation; the key leaves ``self.cfg`` so that
        mmengine's ``train()`` does not wrap the modules again."""
        value = self.cfg.pop('activation_checkpointing', None)
        if value is None:
            return
        model = self.model.module if is_model_wrapper(
            self.model) else self.model
        names = turn_on_activation_checkpointing(model, value)
        self.logger.info(
            f'activation_checkpointing={value!r}: {len(names)} modules '
            f'checkpointed (non-reentrant): {", ".join(names)}')
        if not any(isinstance(h, GradientCoverageHook) for h in self.hooks):
            self.register_hook(GradientCoverageHook())

    def load_checkpoint(self, filename: str, *args, **kwargs) -> dict:
        """mmengine's ``load_checkpoint`` (every load of a run goes through
        it: ``load_from``, ``resume``, ``tools/test.py``); then one warning
        when the checkpoint is in the 0.x box convention
        (:func:`~..box_convention.migrate.unconverted_note`)."""
        checkpoint = super().load_checkpoint(filename, *args, **kwargs)
        note = unconverted_note(checkpoint, filename)
        if note:
            self.logger.warning(note)
        return checkpoint

    @staticmethod
    def build_dataloader(dataloader, seed: Optional[int] = None,
                         diff_rank_seed: bool = False):
        """mmengine's ``build_dataloader``; then the dataset wrappers'
        index lists are shared with the workers (a Python list of ints is
        copied page by page into every forked worker that reads it, and
        pickled to every spawn worker), and each worker freezes what it
        inherited (``gc.freeze()``: the cyclic collector's traversals
        would copy every inherited page holding a container;
        ``datasets/heap.py``)."""
        built = Runner.build_dataloader(dataloader, seed=seed,
                                        diff_rank_seed=diff_rank_seed)
        share_index_lists(built.dataset)
        if built.num_workers > 0:
            built.worker_init_fn = frozen_heap_worker_init(
                built.worker_init_fn)
        return built

    def _single_wrapper_counts(self) -> int:
        """Accumulation count of a single optimizer wrapper, else 1."""
        wrapper = self.optim_wrapper
        if isinstance(wrapper, OptimWrapperDict):
            return 1
        if isinstance(wrapper, OptimWrapper):
            return _accumulative_counts(wrapper)
        if isinstance(wrapper, dict) and not is_multi_wrapper(wrapper):
            return int(wrapper.get('accumulative_counts', 1))
        return 1

    def build_optim_wrapper(
        self, optim_wrapper: Union[OptimWrapper, Dict]
    ) -> Union[OptimWrapper, OptimWrapperDict]:
        """Check the config, then build as mmengine does.

        Args:
            optim_wrapper (OptimWrapper | dict): Wrapper or its config.

        Returns:
            OptimWrapper | OptimWrapperDict: The built wrapper.
        """
        if isinstance(optim_wrapper, dict):
            cfg = dict(
                optim_wrapper=optim_wrapper,
                train_dataloader=self.cfg.get('train_dataloader') or {})
            validate_optim_wrapper(cfg)
            check_amp_supported(cfg)
            warn_bf16_on_cpu(self.model, cfg)
            warn_accumulation_with_batchnorm(self.model, cfg)
        return super().build_optim_wrapper(optim_wrapper)

    def _train_batch_size(self) -> int:
        dataloader = self.train_dataloader
        batch_size = dataloader.batch_size
        if batch_size is None and dataloader.batch_sampler is not None:
            batch_size = getattr(dataloader.batch_sampler, 'batch_size', None)
        if batch_size is None:
            raise ValueError(
                'auto_scale_lr: cannot read the batch size of the train '
                'dataloader (its batch sampler has no batch_size); disable '
                'auto_scale_lr and scale the LR by hand.')
        return int(batch_size)

    def scale_lr(self,
                 optim_wrapper: OptimWrapper,
                 auto_scale_lr: Optional[Dict] = None) -> None:
        """Scale the LR linearly to the effective batch size.

        The effective batch is ``world_size x batch_size x
        accumulative_counts``; mmengine's version leaves out the
        accumulation. Like mmengine's, it must run after the optimizer
        wrapper is built and before the parameter schedulers are.

        Args:
            optim_wrapper (OptimWrapper | OptimWrapperDict): Built wrapper
                whose parameter groups' ``lr`` is scaled.
            auto_scale_lr (dict, optional): ``dict(enable=bool,
                base_batch_size=int)``. Nothing happens unless enabled.
        """
        if auto_scale_lr is None or not auto_scale_lr.get('enable', False):
            return
        if 'base_batch_size' not in auto_scale_lr:
            raise ValueError(
                'auto_scale_lr: `base_batch_size` is missing; set '
                'auto_scale_lr = dict(enable=True, base_batch_size=<GPUs x '
                'samples per GPU the LR was tuned for>).')
        if _is_built(self.param_schedulers):
            raise RuntimeError('`scale_lr` should be called before building '
                               'ParamScheduler because ParamScheduler will '
                               'store initial lr from optimizer wrappers')
        if not isinstance(optim_wrapper, OptimWrapper):
            raise TypeError(
                'scale_lr: expected a built OptimWrapper / OptimWrapperDict, '
                f'got {type(optim_wrapper).__name__}; call it after '
                'build_optim_wrapper.')
        base = auto_scale_lr['base_batch_size']
        batch_size = self._train_batch_size()
        if isinstance(optim_wrapper, OptimWrapperDict):
            wrappers = dict(optim_wrapper.items())
        else:
            wrappers = {'': optim_wrapper}
        for name, wrapper in wrappers.items():
            counts = _accumulative_counts(wrapper)
            effective, factor = lr_scale_factor(base, self.world_size,
                                                batch_size, counts)
            before = [group['lr'] for group in wrapper.optimizer.param_groups]
            for group in wrapper.optimizer.param_groups:
                group['lr'] = group['lr'] * factor
            after = [group['lr'] for group in wrapper.optimizer.param_groups]
            label = f' ({name})' if name else ''
            self.logger.info(
                f'auto_scale_lr{label}: effective batch = world_size '
                f'{self.world_size} x batch_size {batch_size} x '
                f'accumulative_counts {counts} = {effective}; base_batch_size '
                f'{base}; LR scaled by {factor:g}: {_lrs(before)} -> '
                f'{_lrs(after)}')


def _lrs(values) -> str:
    unique = sorted(set(values))
    text = ', '.join(f'{v:.6g}' for v in unique)
    return text if len(unique) == 1 else f'[{text}]'
