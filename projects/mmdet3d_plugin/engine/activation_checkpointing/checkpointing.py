"""Activation checkpointing that keeps a model's results: non-reentrant,
with keyword and list inputs, BatchNorm statistics updated once per step
and the random draws of the forward replayed.

A checkpointed module keeps only its inputs from the forward; its
activations are recomputed in the backward, one module at a time, so the
step's peak holds the activations of one module instead of all of them.
mmengine's ``activation_checkpointing`` key wraps ``forward`` in reentrant
``torch.utils.checkpoint`` with positional arguments only: a module that
takes a list (``SECONDFPN``, ``CenterHead``) loses its graph, and a module
whose inputs do not require grad gets no gradient for its weights
(mmengine #1425). Here a checkpointed module:

- runs through ``torch.utils.checkpoint.checkpoint(..., use_reentrant=
  False)``: any inputs (lists, dicts, ``SparseConvTensor``, keyword
  arguments) and every parameter's gradient, whether or not the inputs
  require grad;
- leaves its buffers as its forward left them after the recomputation:
  BatchNorm's running statistics and ``num_batches_tracked`` move once per
  step, as without checkpointing (a plain recomputation moves them twice);
- recomputes with the CPU and CUDA random states its forward started with,
  whatever its inputs are (torch's own preservation finds the CUDA devices
  only among tensor arguments), so dropout draws the same mask;
- runs its plain forward in evaluation and under ``torch.no_grad()``.

The module's class is swapped for a subclass of it (same name, same
``state_dict`` keys, ``isinstance`` unchanged) whose ``forward`` does the
above; :func:`turn_off_activation_checkpointing` swaps it back.

:func:`resolve_modules` turns the config's ``activation_checkpointing``
value into module names: names and ``*`` patterns of
``model.named_modules()``, and ``'auto'`` (preset
``'activation_checkpointing'``): the parts of mmdet3d's LiDAR detectors at
the granularity that lowers the peak, by class (:data:`AUTO_PARTS`).
"""
import contextlib
import functools
import re
from typing import Dict, Iterator, List, Sequence, Tuple, Union

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

#: The ``activation_checkpointing`` value that picks the parts by class.
AUTO = 'auto'

#: mmdet3d classes (and their subclasses) and the children of each that
#: ``'auto'`` checkpoints one by one (``''``: the module itself). A child
#: without children of its own (one convolution) is left out: its input
#: is kept either way, so checkpointing it would save nothing.
AUTO_PARTS: Dict[str, Tuple[str, ...]] = {
    # pts_voxel_encoder of pillar models: a Linear + BN on every point of
    # every pillar (the largest activations of pillar02).
    'PillarFeatureNet': ('pfn_layers.*', ),
    # pts_middle_encoder of voxel models: the input convolution and the
    # first stage, at full resolution. The later stages, each opened by a
    # strided sparse convolution, cost more to recompute than they save
    # (voxel0075 at batch 4 on the CPU: they took the step from 1.25x to
    # 1.6x the time for 0.18x less peak; name them to add them).
    'SparseEncoder': ('conv_input', 'encoder_layers.encoder_layer1'),
    # pts_backbone: each block of the 2D backbone.
    'SECOND': ('blocks.*', ),
    # pts_neck: the upsampling branches and their concatenation (it takes
    # the list of the backbone's outputs).
    'SECONDFPN': ('', ),
    # pts_bbox_head: the shared convolution and each task head.
    'CenterHead': ('shared_conv', 'task_heads.*'),
    # An anchor head's branches (single convolutions in mmdet3d's
    # Anchor3DHead, left out by the rule above).
    'Anchor3DHead': ('conv_cls', 'conv_reg', 'conv_dir_cls'),
}

_CLASSES: Dict[type, type] = {}


class _RandomState:
    """The CPU and CUDA random states a forward started with."""

    def __init__(self) -> None:
        self.cpu = None
        self.cuda: List[torch.Tensor] = []

    def capture(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda = (torch.cuda.get_rng_state_all()
                     if torch.cuda.is_initialized() else [])


@contextlib.contextmanager
def _forward(state: _RandomState) -> Iterator[None]:
    state.capture()
    yield


@contextlib.contextmanager
def _recompute(module: nn.Module, state: _RandomState) -> Iterator[None]:
    buffers = [b for b in module.buffers() if b is not None]
    kept = [b.detach().clone() for b in buffers]
    with torch.random.fork_rng(devices=range(len(state.cuda))):
        torch.set_rng_state(state.cpu)
        if state.cuda:
            torch.cuda.set_rng_state_all(state.cuda)
        try:
            yield
        finally:
            with torch.no_grad():
                for buffer, value in zip(buffers, kept):
                    buffer.copy_(value)


def _contexts(module: nn.Module):
    state = _RandomState()
    return _forward(state), _recompute(module, state)


class CheckpointedModule:
    """Mixin of the swapped classes (see the module's docstring)."""

    #: The class the module had before :func:`checkpoint_module`.
    plain_class: type

    def forward(self, *args, **kwargs):
        forward = super().forward
        if not (self.training and torch.is_grad_enabled()):
            return forward(*args, **kwargs)
        if kwargs:
            forward = functools.partial(forward, **kwargs)
        return checkpoint(
            forward,
            *args,
            use_reentrant=False,
            preserve_rng_state=False,  # replayed by _recompute, any inputs
            context_fn=functools.partial(_contexts, self))


def is_checkpointed(module: nn.Module) -> bool:
    """Whether :func:`checkpoint_module` wrapped ``module``."""
    return isinstance(module, CheckpointedModule)


def checkpoint_module(module: nn.Module) -> None:
    """Checkpoint ``module``'s activations (no-op if already), in place."""
    if is_checkpointed(module):
        return
    cls = type(module)
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (CheckpointedModule, cls), {
            '__module__': cls.__module__,
            '__qualname__': cls.__qualname__,
            'plain_class': cls,
        })
    module.__class__ = _CLASSES[cls]


def uncheckpoint_module(module: nn.Module) -> None:
    """Undo :func:`checkpoint_module` (no-op if not checkpointed)."""
    if is_checkpointed(module):
        module.__class__ = module.plain_class


def _class_names(module: nn.Module) -> List[str]:
    return [c.__name__ for c in type(module).__mro__]


def auto_modules(model: nn.Module) -> List[str]:
    """The modules ``'auto'`` checkpoints in ``model``
    (:data:`AUTO_PARTS`), in ``named_modules()`` order."""
    names: List[str] = []
    covered: List[str] = []
    for name, module in model.named_modules():
        if any(name == c or name.startswith(c + '.') for c in covered):
            continue
        rule = next((AUTO_PARTS[c] for c in _class_names(module)
                     if c in AUTO_PARTS), None)
        if rule is None:
            continue
        covered.append(name)
        for pattern in rule:
            full = '.'.join(p for p in (name, pattern) if p)
            names += [n for n in _matches(model, full)
                      if any(True for _ in model.get_submodule(n).children())]
    return names


def _pattern(name: str) -> 're.Pattern':
    return re.compile(re.escape(name).replace(r'\*', r'[^.]+'))


def _matches(model: nn.Module, name: str) -> List[str]:
    pattern = _pattern(name)
    return [n for n, _ in model.named_modules() if pattern.fullmatch(n)]


def _near(model: nn.Module, name: str) -> List[str]:
    """Existing module names next to a name that matched nothing."""
    parent = name.rsplit('.', 1)[0] if '.' in name else ''
    while parent and not _matches(model, parent):
        parent = parent.rsplit('.', 1)[0] if '.' in parent else ''
    prefix = f'{parent}.' if parent else ''
    names = [n for n, _ in model.named_modules()
             if n.startswith(prefix) and n != parent
             and '.' not in n[len(prefix):]]
    return names[:12]


def resolve_modules(model: nn.Module,
                    value: Union[str, Sequence[str]],
                    key: str = 'activation_checkpointing') -> List[str]:
    """The names of the modules to checkpoint.

    Args:
        model (nn.Module): The model (unwrapped from DDP).
        value (str | Sequence[str]): The config's value: a module name
            (``'pts_neck'``), a pattern where ``*`` stands for one part of
            a name (``'pts_bbox_head.task_heads.*'``), ``'auto'``, or a list
            of them.
        key (str): The config key, for the errors. Defaults to
            ``'activation_checkpointing'``.

    Returns:
        list[str]: Module names, each once, none inside another.

    Raises:
        TypeError: If ``value`` is not a string or a list of strings.
        ValueError: If an entry matches no module, matches the whole model,
            or one chosen module lies inside another.
    """
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, (list, tuple)) or not all(
            isinstance(e, str) for e in entries):
        raise TypeError(
            f'{key}: expected a module name, a list of them or {AUTO!r}, got '
            f"{value!r}; write e.g. {key} = ['pts_backbone', 'pts_neck'] or "
            f"presets = ['activation_checkpointing'].")
    names: List[str] = []
    for entry in entries:
        if entry == AUTO:
            found = auto_modules(model)
            if not found:
                raise ValueError(
                    f'{key}: {AUTO!r} knows none of the parts of '
                    f'{type(model).__name__} (it knows '
                    f'{sorted(AUTO_PARTS)}); name the modules instead, e.g. '
                    f"{key} = ['backbone'].")
        elif entry == '':
            raise ValueError(
                f"{key}: '' would checkpoint the whole model, whose outputs "
                'are the losses: nothing is saved. Name its parts, e.g. '
                f"{key} = ['pts_backbone', 'pts_neck'].")
        else:
            found = _matches(model, entry)
            if not found:
                raise ValueError(
                    f'{key}: {entry!r} names no module of '
                    f'{type(model).__name__}; modules there: '
                    f'{_near(model, entry)}. Fix the name, or use '
                    f"presets = ['activation_checkpointing'] for the parts "
                    'this plugin knows.')
        names += [n for n in found if n not in names]
    for outer in names:
        for inner in names:
            if inner.startswith(outer + '.'):
                raise ValueError(
                    f'{key}: {inner!r} lies inside {outer!r}, which is '
                    f'checkpointed too; keep one of them.')
    return names


def turn_on_activation_checkpointing(
        model: nn.Module, value: Union[str, Sequence[str]],
        key: str = 'activation_checkpointing') -> List[str]:
    """Checkpoint the modules :func:`resolve_modules` names, in place.

    Returns:
        list[str]: Their names.
    """
    names = resolve_modules(model, value, key)
    for name in names:
        checkpoint_module(model.get_submodule(name))
    return names


def turn_off_activation_checkpointing(model: nn.Module) -> List[str]:
    """Undo every :func:`checkpoint_module` inside ``model``.

    Returns:
        list[str]: The names of the modules that were checkpointed.
    """
    found = checkpointed_modules(model)
    for _, module in found:
        uncheckpoint_module(module)
    return [name for name, _ in found]


def checkpointed_modules(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    """The checkpointed modules of ``model`` and their names."""
    return [(n, m) for n, m in model.named_modules() if is_checkpointed(m)]
