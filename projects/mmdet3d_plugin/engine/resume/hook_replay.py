"""What epoch-triggered hooks did before a checkpoint, done again when a
run resumes.

A hook that changes the data or the model in ``before_train_epoch`` of
one epoch only (mmdet3d's ``DisableObjectSampleHook``: ``epoch ==
disable_after_epoch``) keeps no trace of it in the checkpoint, so a run
resumed after that epoch trains as if it had never run: ObjectSample on
again. The resumable epoch loop calls ``before_train_epoch`` of such hooks
once for every epoch before the one it resumes in, with ``runner.epoch``
at that epoch, before the resumed epoch starts. Which hooks:

* the upstream hooks of :data:`REPLAYED_HOOKS` (by class name, subclasses
  included);
* any hook whose class sets ``replay_on_resume = True`` (the documented
  way for a hook of one's own; its ``before_train_epoch`` must do only what
  it did at that epoch, without waiting for data).

Hooks that decide from ``epoch >=`` (mmdet's ``PipelineSwitchHook``,
``YOLOXModeSwitchHook``) do it again at the first epoch of the resumed run
by themselves and are not replayed.
"""
import logging
from typing import List

from mmengine.logging import print_log

#: Upstream hooks whose ``before_train_epoch`` acts at one epoch only.
REPLAYED_HOOKS = ('DisableObjectSampleHook', )


def replayed_hooks(hooks) -> List[object]:
    """The hooks among ``hooks`` that a resume replays, in their order."""
    return [
        hook for hook in hooks
        if getattr(hook, 'replay_on_resume', False) or any(
            cls.__name__ in REPLAYED_HOOKS for cls in type(hook).__mro__)
    ]


def replay_epoch_hooks(loop, epochs: int) -> List[str]:
    """Call ``before_train_epoch`` of the replayed hooks of ``loop``'s
    runner for epochs ``0 .. epochs - 1``, with the loop's epoch set to
    each (``runner.epoch`` reads it), then put the epoch back.

    Args:
        loop: An epoch-based train loop (``_epoch`` is its epoch).
        epochs (int): The epoch the run resumes in.

    Returns:
        list[str]: The names of the hooks replayed (empty if none).
    """
    hooks = replayed_hooks(loop.runner.hooks) if epochs > 0 else []
    if not hooks:
        return []
    resumed = loop._epoch
    try:
        for epoch in range(epochs):
            loop._epoch = epoch
            for hook in hooks:
                hook.before_train_epoch(loop.runner)
    finally:
        loop._epoch = resumed
    names = [type(hook).__name__ for hook in hooks]
    print_log(
        f'exact resume: replayed before_train_epoch of {", ".join(names)} '
        f'for epochs 1-{epochs} (what they did before the checkpoint)',
        logger='current', level=logging.INFO)
    return names
