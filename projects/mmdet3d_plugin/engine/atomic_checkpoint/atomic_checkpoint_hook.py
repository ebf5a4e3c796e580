"""Checkpoint hook whose files survive a kill at any moment, that also
saves every N minutes and never writes a state holding NaN or Inf
(:class:`AtomicCheckpointHook`), and the config change that makes it a
run's checkpoint hook (:func:`use_atomic_checkpoints`, with
``--checkpoint-minutes``: :func:`set_checkpoint_minutes`)."""
import collections
import time
from typing import Any, Iterator, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.dist import is_main_process
from mmengine.fileio import LocalBackend, get_file_backend
from mmengine.hooks import CheckpointHook
from mmengine.model import is_model_wrapper

from mmdet3d.registry import HOOKS
from ...failures.exceptions import NonFiniteStateError
from ...fileio.atomic import (ATOMIC_BACKEND, atomic_write,
                              remove_stale_temporaries)

#: The checkpoint hooks :func:`use_atomic_checkpoints` replaces.
STOCK_TYPES = ('CheckpointHook', 'mmengine.CheckpointHook')
#: The names of :class:`AtomicCheckpointHook` in a config.
ATOMIC_TYPES = ('AtomicCheckpointHook', 'mmdet3d.AtomicCheckpointHook')


def _tensors(value: Any, prefix: str) -> Iterator[Tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, dict):
        for key, each in value.items():
            yield from _tensors(each, f'{prefix}.{key}' if prefix else
                                str(key))
    elif isinstance(value, (list, tuple)):
        for i, each in enumerate(value):
            yield from _tensors(each, f'{prefix}.{i}')


def nonfinite_state(runner) -> Optional[str]:
    """The name of the first model tensor (``model.<name>``) or optimizer
    state tensor (``optimizer.<path>``) that holds a NaN or an infinity;
    None when all are finite."""
    model = runner.model.module if is_model_wrapper(
        runner.model) else runner.model
    parts = [('model', model.state_dict())]
    wrapper = getattr(runner, 'optim_wrapper', None)
    if wrapper is not None and hasattr(wrapper, 'state_dict'):
        parts.append(('optimizer', wrapper.state_dict()))
    for prefix, state in parts:
        for name, tensor in _tensors(state, prefix):
            if tensor.is_floating_point() and not bool(
                    torch.isfinite(tensor).all()):
                return name
    return None


@HOOKS.register_module()
class AtomicCheckpointHook(CheckpointHook):
    """``CheckpointHook`` that never leaves a partial checkpoint behind.

    Takes ``CheckpointHook``'s arguments unchanged. Differences, all about
    a run killed (SIGTERM, SIGINT, SIGKILL, a node failure) while saving:

    * checkpoints in a local folder are written through the
      ``'atomic_local'`` file backend (temporary file, fsync, rename), so
      ``iter_N.pth`` is either complete or absent;
    * the ``last_checkpoint`` pointer is replaced atomically, and only
      after its checkpoint is complete (mmengine rewrites it in place);
    * with ``max_keep_ckpts``, the oldest checkpoint is deleted after the
      new one and the pointer are written, not before, so a kill during
      the save never leaves the pointer naming a deleted file;
    * temporary files of a writer killed by SIGKILL are removed at the
      start of the next run in the same folder;
    * a checkpoint whose weights or optimizer state hold a NaN or an
      infinity is not written, and the run stops (``NonFiniteStateError``
      naming the tensor: what it would train from then on could never be
      saved): it never replaces a good one, ``last_checkpoint`` keeps
      naming the last finite one and ``max_keep_ckpts`` never deletes it.

    With ``interval_minutes=N`` it also saves ``iter_<k>.pth`` when N
    minutes have passed since the last save of this run (rank 0's clock,
    checked after each iteration), so a crash loses at most N minutes
    whatever the epoch length; of those timed checkpoints the newest
    ``max_keep_timed`` are kept (the interval ones follow
    ``max_keep_ckpts``). ``tools/train.py --checkpoint-minutes N`` sets it.

    Checkpoints in remote storage (``out_dir='s3://...'`` or explicit
    ``backend_args``/``file_client_args``) are saved as by
    ``CheckpointHook``.

    The saving order (``_save_checkpoint_with_step``) follows mmengine
    0.10.7's; review this class when upgrading mmengine.

    Examples:
        >>> default_hooks = dict(
        ...     checkpoint=dict(
        ...         type='AtomicCheckpointHook', interval=1000,
        ...         by_epoch=False, max_keep_ckpts=3))
    """

    priority = 'VERY_LOW'

    def __init__(self, *args, interval_minutes: Optional[float] = None,
                 max_keep_timed: int = 2, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if interval_minutes is not None and not interval_minutes > 0:
            raise ValueError(
                'AtomicCheckpointHook: interval_minutes must be a positive '
                f'number of minutes, got {interval_minutes!r}; or None to '
                'save by iteration/epoch only')
        if int(max_keep_timed) < 1:
            raise ValueError(
                'AtomicCheckpointHook: max_keep_timed must be 1 or more, '
                f'got {max_keep_timed!r}')
        self.interval_minutes = interval_minutes
        self.max_keep_timed = int(max_keep_timed)
        self._timed: collections.deque = collections.deque()
        self._saved_at = time.monotonic()

    def before_train(self, runner) -> None:
        """Pick the atomic backend for local folders; sweep temporaries.

        Args:
            runner (Runner): The runner of the training process.
        """
        super().before_train(runner)
        if (self.file_client_args is None
                and type(self.file_backend) is LocalBackend):
            self.backend_args = dict(self.backend_args or {})
            self.backend_args['backend'] = ATOMIC_BACKEND
            self.file_backend = get_file_backend(
                self.out_dir, backend_args=self.backend_args)
            if is_main_process():
                for path in remove_stale_temporaries(self.out_dir):
                    runner.logger.warning(
                        f'AtomicCheckpointHook: removed {path}, a partial '
                        'checkpoint of an interrupted run')

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        """Save by iteration as ``CheckpointHook`` does, then by time."""
        super().after_train_iter(runner, batch_idx, data_batch, outputs)
        if self.interval_minutes is None or not is_main_process():
            return
        if time.monotonic() - self._saved_at < self.interval_minutes * 60:
            return
        step = runner.iter + 1
        if self.save_now(runner):
            runner.logger.info(
                f'AtomicCheckpointHook: saved iter_{step}.pth, '
                f'{self.interval_minutes:g} min after the last checkpoint')
            self._timed.append(step)
            self._prune_timed(runner)

    def _prune_timed(self, runner) -> None:
        while len(self._timed) > self.max_keep_timed:
            step = self._timed.popleft()
            if step in getattr(self, 'keep_ckpt_ids', ()):
                continue
            path = self.file_backend.join_path(self.out_dir,
                                               f'iter_{step}.pth')
            if path != self.last_ckpt and self.file_backend.isfile(path):
                self.file_backend.remove(path)

    def save_now(self, runner) -> bool:
        """Save ``iter_<k>.pth`` of the iteration that just ended, unless
        this hook saved it already, and point ``last_checkpoint`` at it.

        Call it on every rank, from ``after_train_iter`` (rank 0 writes).

        Returns:
            bool: Whether a file was written (False: it existed).
        """
        step = runner.iter + 1
        name = f'iter_{step}.pth'
        path = self.file_backend.join_path(self.out_dir, name)
        if self.last_ckpt == path:
            return False
        self._check_finite(runner, name)
        runner.save_checkpoint(
            self.out_dir, name, self.file_client_args,
            save_optimizer=self.save_optimizer,
            save_param_scheduler=self.save_param_scheduler,
            by_epoch=False, backend_args=self.backend_args, **self.args)
        self._after_save(runner, path)
        return True

    def _after_save(self, runner, path: str) -> None:
        self.last_ckpt = path
        runner.message_hub.update_info('last_ckpt', path)
        self._saved_at = time.monotonic()
        if is_main_process():
            self._write_pointer(runner)

    def _write_pointer(self, runner) -> None:
        """``last_checkpoint`` names ``last_ckpt``, replaced atomically."""
        atomic_write(self.last_ckpt, self.file_backend.join_path(
            runner.work_dir, 'last_checkpoint'))

    @property
    def _atomic(self) -> bool:
        return (self.backend_args or {}).get('backend') == ATOMIC_BACKEND

    def _check_finite(self, runner, name: str) -> None:
        """Raise before a save of a state that holds NaN or Inf."""
        tensor = nonfinite_state(runner)
        if tensor is not None:
            raise NonFiniteStateError(
                f'AtomicCheckpointHook: {name} not written: {tensor} holds '
                f'NaN or Inf, and the run stops; last_checkpoint still names '
                f'{self.last_ckpt}. Fix: resume from it (--resume) with a '
                'lower LR, longer warm-up or optim_wrapper.clip_grad, and '
                'read nonfinite.json in the work dir if it exists')

    def _save_checkpoint_with_step(self, runner, step, meta) -> None:
        self._saved_at = time.monotonic()
        self._check_finite(runner, self.filename_tmpl.format(step))
        if not self._atomic:
            super()._save_checkpoint_with_step(runner, step, meta)
            return

        outdated: Optional[int] = None
        if self.max_keep_ckpts > 0 and not (self.keep_ckpt_ids and
                                            self.keep_ckpt_ids[-1] == step):
            if len(self.keep_ckpt_ids) == self.max_keep_ckpts:
                outdated = self.keep_ckpt_ids.popleft()
            self.keep_ckpt_ids.append(step)
            runner.message_hub.update_info('keep_ckpt_ids',
                                           list(self.keep_ckpt_ids))

        ckpt_filename = self.filename_tmpl.format(step)
        self.last_ckpt = self.file_backend.join_path(self.out_dir,
                                                     ckpt_filename)
        runner.message_hub.update_info('last_ckpt', self.last_ckpt)

        runner.save_checkpoint(
            self.out_dir,
            ckpt_filename,
            self.file_client_args,
            save_optimizer=self.save_optimizer,
            save_param_scheduler=self.save_param_scheduler,
            meta=meta,
            by_epoch=self.by_epoch,
            backend_args=self.backend_args,
            **self.args)

        if not is_main_process():
            return
        self._write_pointer(runner)
        if outdated is not None:
            path = self.file_backend.join_path(
                self.out_dir, self.filename_tmpl.format(outdated))
            if self.file_backend.isfile(path):
                self.file_backend.remove(path)
            elif self.file_backend.isdir(path):
                self.file_backend.rmtree(path)


def save_iteration_checkpoint(runner) -> str:
    """Save the checkpoint of the iteration that just ended (every rank
    calls it; rank 0 writes) and return its path.

    Through the run's :class:`AtomicCheckpointHook` when it has one (the
    plugin's tools always do), else with ``Runner.save_checkpoint`` into
    the work dir, ``last_checkpoint`` written atomically.
    """
    for hook in runner.hooks:
        if isinstance(hook, AtomicCheckpointHook):
            hook.save_now(runner)
            return hook.last_ckpt
    name = f'iter_{runner.iter + 1}.pth'
    runner.save_checkpoint(runner.work_dir, name, by_epoch=False)
    path = f'{runner.work_dir}/{name}'
    if is_main_process():
        atomic_write(path, f'{runner.work_dir}/last_checkpoint')
    return path


def use_atomic_checkpoints(cfg: Config) -> Config:
    """Make ``cfg``'s checkpoint hook :class:`AtomicCheckpointHook` (a row
    of ``engine/run_defaults.py``).

    Only mmengine's stock ``CheckpointHook`` (the default) is replaced; a
    config that names another checkpoint hook keeps it, as does one that
    sets ``default_hooks.checkpoint = None``. Every argument of the hook is
    kept.

    Args:
        cfg (Config): Loaded config, changed in place.

    Returns:
        Config: ``cfg`` itself.
    """
    # A scoped name also resolves when default_scope is not mmdet3d.
    hook_type = ('AtomicCheckpointHook' if cfg.get('default_scope') ==
                 'mmdet3d' else 'mmdet3d.AtomicCheckpointHook')
    default_hooks = cfg.get('default_hooks')
    if default_hooks is None:
        cfg.default_hooks = dict(checkpoint=dict(type=hook_type, interval=1))
        return cfg
    hook = default_hooks.get('checkpoint', dict(type='CheckpointHook'))
    if isinstance(hook, dict) and hook.get('type') in STOCK_TYPES:
        hook = dict(hook, type=hook_type)
        hook.setdefault('interval', 1)
        default_hooks['checkpoint'] = hook
    return cfg


def set_checkpoint_minutes(cfg: Config, minutes: Optional[float]) -> Config:
    """``--checkpoint-minutes N``: the checkpoint hook also saves every N
    minutes (``AtomicCheckpointHook(interval_minutes=N)``).

    Args:
        cfg (Config): Config whose checkpoint hook is already the atomic
            one (:func:`use_atomic_checkpoints`), changed in place.
        minutes (float, optional): N; None changes nothing.

    Returns:
        Config: ``cfg`` itself.

    Raises:
        ValueError: If N is not positive, or the config's checkpoint hook
            is another one.
    """
    if minutes is None:
        return cfg
    if not minutes > 0:
        raise ValueError(
            f'train: --checkpoint-minutes {minutes}: give a positive number '
            'of minutes')
    hook = (cfg.get('default_hooks') or {}).get('checkpoint')
    if not isinstance(hook, dict) or hook.get('type') not in ATOMIC_TYPES:
        kind = hook.get('type') if isinstance(hook, dict) else hook
        raise ValueError(
            f'train: --checkpoint-minutes needs the checkpoint hook '
            f'AtomicCheckpointHook, but default_hooks.checkpoint is {kind!r}.'
            " Fix: use default_hooks.checkpoint=dict(type='CheckpointHook', "
            '...) (the tools make it atomic) or drop the flag')
    hook['interval_minutes'] = float(minutes)
    return cfg
