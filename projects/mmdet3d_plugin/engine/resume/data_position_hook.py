"""The hook that puts the data position into checkpoints and takes it back
out, and keeps the main process's random state a function of the
iteration."""
from mmengine.dist import get_rank, is_main_process
from mmengine.hooks import Hook

from mmdet3d.registry import HOOKS

from .position import META_KEY
from .restart import read_progress, restart_attempt, write_progress
from .sample_key import seed_iteration


@HOOKS.register_module()
class DataPositionHook(Hook):
    """Exact resume's hook; the resumable train loops register it.

    * ``before_save_checkpoint``: ``meta['data_position']`` = the loop's
      position (epoch, global sample position, seed, world size, batch
      size);
    * ``after_load_checkpoint``: the loop's sampler continues there, and
      one line is logged: where the data continues and, in a restarted
      run, the attempt, the file and iteration resumed from, and the
      iterations lost;
    * ``before_train_iter``: numpy's global RNG, ``random`` and torch's
      generators (CPU, and the current CUDA device) are seeded from
      ``(seed, rank, iteration)``: the model's own random draws (dropout,
      random sampling in heads) repeat after a resume without saving any
      generator's state;
    * ``after_train_iter``: rank 0 records the finished iteration in
      ``<work_dir>/train_progress.json`` (for the iterations-lost count).

    Priority ``VERY_HIGH``: the position is in place before any other
    hook saves a checkpoint.
    """

    priority = 'VERY_HIGH'

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """Record the data position in ``checkpoint['meta']``."""
        position = getattr(runner.train_loop, 'data_position_meta',
                           lambda: None)()
        if position is not None:
            checkpoint.setdefault('meta', {})[META_KEY] = position

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """Continue the data where ``checkpoint`` stopped; log the line."""
        restore = getattr(runner.train_loop, 'restore_data_position', None)
        if restore is None:
            return
        meta = checkpoint.get('meta', {})
        where = restore(meta)
        line = f'resume: {where}'
        attempt = restart_attempt()
        if attempt is not None:
            done = int(meta.get('iter', 0))
            reached = read_progress(runner.work_dir)
            lost = ('unknown' if reached is None else
                    str(max(0, reached - done)))
            # mmengine keeps the resumed file only here.
            source = getattr(runner, '_load_from', None) or 'the checkpoint'
            line = (f'restart: {attempt.text()}: resumed from {source} at '
                    f'iteration {done}; iterations lost: {lost}; {where}')
        runner.logger.info(line)

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        """Seed the main process for this iteration."""
        sampler = getattr(runner.train_loop, 'sampler', None)
        if sampler is None:
            return
        seed_iteration(sampler.seed, get_rank(), runner.iter)

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        """Rank 0 records the finished iteration."""
        if is_main_process():
            write_progress(runner.work_dir, runner.iter + 1, runner.epoch)
