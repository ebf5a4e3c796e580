"""Stop a run whose activation checkpointing leaves a parameter without
gradient, at its first backward.

Reentrant checkpointing (mmengine's ``activation_checkpointing`` key)
gives no gradient to the weights of a module whose inputs do not require
grad, and training goes on with them frozen: nothing says so (mmengine
#1425). :class:`PluginRunner` checkpoints correctly and adds this hook
whenever modules are checkpointed: after the first iteration's backward,
a trainable parameter of a checkpointed module that received no gradient
is an error naming it, raised on every rank (the marks of all ranks are
combined first). Parameters outside checkpointed modules, and runs
without checkpointing, are ``DDPUnusedParamHook``'s business.
"""
from typing import List, Optional, Sequence

import torch
from mmengine.dist import all_reduce
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmdet3d.registry import HOOKS

from ...failures.exceptions import GradientCoverageError
from ..unused_params.marks import mark_gradients
from .checkpointing import checkpointed_modules

#: Parameters named in the error at most.
SHOWN = 8


@HOOKS.register_module()
class GradientCoverageHook(Hook):
    """Check that every trainable parameter of the checkpointed modules got
    a gradient in the run's first iteration.

    :class:`~projects.mmdet3d_plugin.engine.PluginRunner` registers it when
    the config's ``activation_checkpointing`` (or preset
    ``'activation_checkpointing'``) checkpoints modules.

    Raises:
        GradientCoverageError: After the first iteration, naming the
            parameters without gradient, their module, and the fix.
    """

    priority = 'LOW'

    def __init__(self) -> None:
        self._names: List[str] = []
        self._modules: List[str] = []
        self._used: Optional[bytearray] = None
        self._handles: List = []

    def before_train(self, runner) -> None:
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        names, params = [], []
        for prefix, module in checkpointed_modules(model):
            self._modules.append(prefix)
            for name, param in module.named_parameters():
                if param.requires_grad:
                    names.append(f'{prefix}.{name}')
                    params.append(param)
        self._names = names
        if params:
            self._used, self._handles = mark_gradients(params)

    def _stop_marking(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        if self._used is None:
            return
        used = torch.tensor(list(self._used), dtype=torch.int32)
        self._used = None
        self._stop_marking()
        # A parameter that got a gradient on any rank is covered (one
        # unused on some ranks only is data-dependent: the unused-parameter
        # hook's business); every rank then decides alike.
        all_reduce(used, op='max')
        missing = [n for n, u in zip(self._names, used.tolist()) if not u]
        if missing:
            raise GradientCoverageError(missing_message(missing,
                                                        self._modules))

    def after_train(self, runner) -> None:
        self._stop_marking()


def missing_message(missing: Sequence[str], modules: Sequence[str]) -> str:
    """The error for parameters of checkpointed modules without gradient."""
    owners = sorted({m for m in modules for n in missing
                     if n.startswith(m + '.')})
    shown = ', '.join(missing[:SHOWN]) + (
        f' and {len(missing) - SHOWN} more' if len(missing) > SHOWN else '')
    return (
        f'GradientCoverageHook: {len(missing)} trainable parameter(s) of the '
        f'activation-checkpointed module(s) {owners} got no gradient in the '
        f'first backward: {shown}. Training on would leave them frozen. '
        'Fix: leave these modules out of activation_checkpointing '
        '(--cfg-options activation_checkpointing="[...]"); if they get no '
        'gradient without checkpointing either, they are unused: set '
        'requires_grad=False on them or see tools/find_unused_params.py.')
