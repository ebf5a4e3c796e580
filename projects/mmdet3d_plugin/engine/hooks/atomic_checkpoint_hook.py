"""Checkpoint hook whose files survive a kill at any moment."""
from typing import Optional

from mmengine.dist import is_main_process
from mmengine.fileio import LocalBackend, get_file_backend
from mmengine.hooks import CheckpointHook

from mmdet3d.registry import HOOKS
from ...fileio.atomic import (ATOMIC_BACKEND, atomic_write,
                              remove_stale_temporaries)


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
      start of the next run in the same folder.

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

    @property
    def _atomic(self) -> bool:
        return (self.backend_args or {}).get('backend') == ATOMIC_BACKEND

    def _save_checkpoint_with_step(self, runner, step, meta) -> None:
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
        atomic_write(self.last_ckpt,
                     self.file_backend.join_path(runner.work_dir,
                                                 'last_checkpoint'))
        if outdated is not None:
            path = self.file_backend.join_path(
                self.out_dir, self.filename_tmpl.format(outdated))
            if self.file_backend.isfile(path):
                self.file_backend.remove(path)
            elif self.file_backend.isdir(path):
                self.file_backend.rmtree(path)
