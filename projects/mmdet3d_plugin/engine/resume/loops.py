"""mmengine's train loops, resuming inside an epoch at the sample they
stopped at.

mmengine 0.10.7's ``EpochBasedTrainLoop.run_epoch`` starts every epoch at
batch 0, so a checkpoint saved inside an epoch (``CheckpointHook(by_epoch=
False)``) replays the epoch on resume; ``IterBasedTrainLoop`` loads every
batch it skips ("Advance dataloader N steps"). These loops take the same
arguments and differ only in that:

* their dataloader's ``DefaultSampler`` / ``InfiniteSampler`` is
  :class:`~projects.mmdet3d_plugin.engine.resume.sampler.ResumableSampler`,
  and the DataLoader loads each sample from its own random state
  (``seeded_items``: each sample's augmentation a function of ``(seed,
  epoch, position)``), with the dataset itself left as it is, so upstream
  hooks that reach into it work as under mmengine's loops;
* an epoch-based run resumed after epoch-triggered hooks acted (mmdet3d's
  ``DisableObjectSampleHook``) has them act again (``hook_replay``);
* checkpoints record the data position (:class:`DataPositionHook`), and a
  resumed run starts the sampler there: nothing skipped is loaded;
* batch indices continue where the interrupted epoch was, so hooks that
  count in-epoch batches (the logger, epoch ends) see the same numbers;
* hooks with a ``prepare_dataloader(loader)`` get the train DataLoader
  before its iterator starts (``PreemptionHook``, ``NonFiniteGuardHook``).

``tools/train.py`` puts them in place of mmengine's
(:func:`use_exact_resume`, a row of ``engine/run_defaults.py``).
"""
import copy
import logging
from typing import Optional, Tuple

from mmengine.config import Config
from mmengine.dist import get_world_size
from mmengine.logging import print_log
from mmengine.runner import EpochBasedTrainLoop, IterBasedTrainLoop
from mmengine.runner.loops import _InfiniteDataloaderIterator

from mmdet3d.registry import LOOPS
from ...constants import GT_DRAWS
from .data_position_hook import DataPositionHook
from .hook_replay import replay_epoch_hooks
from .position import DataPosition, first_batch_index, position_from_iters
from .sampler import REPLACEABLE_SAMPLERS, ResumableSampler
from .seeded_items import seed_samples

#: mmengine's train loops and the plugin's loops that resume exactly.
RESUMABLE_LOOPS = {
    'EpochBasedTrainLoop': 'mmdet3d.ResumableEpochBasedTrainLoop',
    'mmengine.EpochBasedTrainLoop': 'mmdet3d.ResumableEpochBasedTrainLoop',
    'IterBasedTrainLoop': 'mmdet3d.ResumableIterBasedTrainLoop',
    'mmengine.IterBasedTrainLoop': 'mmdet3d.ResumableIterBasedTrainLoop',
}
#: The sampler :func:`resumable_dataloader` puts in a train dataloader.
SAMPLER_TYPE = 'mmdet3d.ResumableSampler'
_KEPT = {False: ('shuffle', 'seed', 'round_up'), True: ('shuffle', 'seed')}


def resumable_dataloader(dataloader: dict,
                         stream: bool = False) -> Tuple[dict, Optional[str]]:
    """``dataloader`` with :class:`ResumableSampler` in place of
    mmengine's sampler.

    ``DefaultSampler`` and ``InfiniteSampler`` are replaced, keeping their
    arguments; the dataset is kept as it is (the loops seed its samples
    once it is built: ``seeded_items``). The input is not changed.

    Args:
        dataloader (dict): A ``train_dataloader`` config.
        stream (bool): For an iteration-based loop: the sampler never ends
            (a ``DefaultSampler`` there reshuffles at each pass, as it
            would, without the DataLoader restarting). Defaults to False.

    Returns:
        tuple[dict, str | None]: The new config, and None; or the input
        unchanged and why it cannot resume exactly (another sampler).
    """
    sampler = dict(dataloader.get('sampler') or {})
    kind = sampler.get('type')
    if kind in ('ResumableSampler', SAMPLER_TYPE):
        new = copy.deepcopy(dataloader)
        if stream:
            new['sampler']['infinite'] = True
    elif isinstance(kind, (str, type)) and kind in REPLACEABLE_SAMPLERS:
        infinite = stream or REPLACEABLE_SAMPLERS[kind]
        kept = {k: sampler[k] for k in _KEPT[infinite] if k in sampler}
        new = copy.deepcopy(dataloader)
        new['sampler'] = dict(type=SAMPLER_TYPE, infinite=infinite, **kept)
    else:
        name = getattr(kind, '__name__', kind)
        return dataloader, (
            f'train_dataloader.sampler is {name!r}, not DefaultSampler or '
            'InfiniteSampler, so a resume inside an epoch cannot skip to '
            'the position it stopped at and the epoch is replayed from its '
            "start. Fix: use sampler=dict(type='DefaultSampler', "
            "shuffle=True) (or 'InfiniteSampler'), or checkpoint at epoch "
            'ends')
    return new, None


def _seeded_dataloader(runner, dataloader, stream: bool, gt_draws: str):
    """The train DataLoader, built as mmengine's ``BaseLoop`` builds it,
    with a :class:`ResumableSampler` and its samples seeded
    (``seeded_items``) before any worker starts (``IterBasedTrainLoop``
    starts its iterator when it is made)."""
    if not isinstance(dataloader, dict):
        print_log(
            'exact resume: the train dataloader was built before the loop, '
            'so its sampler stays; a resume inside an epoch replays it. '
            'Fix: give the loop the dataloader config', logger='current',
            level=logging.WARNING)
        return dataloader
    new, problem = resumable_dataloader(dataloader, stream=stream)
    if problem is not None:
        print_log(f'exact resume: {problem}', logger='current',
                  level=logging.WARNING)
    built = runner.build_dataloader(
        new, seed=runner.seed,
        diff_rank_seed=runner._randomness_cfg.get('diff_rank_seed', False))
    if isinstance(built.sampler, ResumableSampler):
        items = seed_samples(built.dataset, gt_draws)
        items.replacer = _sample_replacer(runner)
    return built


def _prepare_dataloader(runner, dataloader):
    """``dataloader``, given to the ``prepare_dataloader(loader)`` of each
    hook that has one before the loop is built, as ``IterBasedTrainLoop``
    starts its iterator then, before any hook runs (``PreemptionHook``:
    the workers ignore the preemption signals; ``NonFiniteGuardHook``:
    the batches' dataset indices are followed from the first)."""
    for hook in runner.hooks:
        prepare = getattr(hook, 'prepare_dataloader', None)
        if callable(prepare):
            prepare(dataloader)
    return dataloader


def _sample_replacer(runner):
    """What replaces the samples that fail to load: the ``sample_replacer
    (runner)`` of the first hook that has one (``BadSampleHook``), asked
    here because the workers may start with the loop, before any hook
    runs; None when no hook has one."""
    for hook in runner.hooks:
        make = getattr(hook, 'sample_replacer', None)
        if callable(make):
            return make(runner)
    return None


class _ResumableLoop:
    """What both loops share: the sampler, the position, the restore."""

    def _init_position(self, stream: bool) -> None:
        self.data_position = DataPosition(per_batch=self._per_batch(),
                                          stream=stream)
        if not any(isinstance(h, DataPositionHook)
                   for h in self.runner.hooks):
            self.runner.register_hook(DataPositionHook())

    @property
    def sampler(self) -> Optional[ResumableSampler]:
        """The dataloader's sampler if it can resume exactly, else None."""
        sampler = getattr(self.dataloader, 'sampler', None)
        return sampler if isinstance(sampler, ResumableSampler) else None

    def _batch_size(self) -> int:
        size = self.dataloader.batch_size
        if size is None:
            size = getattr(self.dataloader.batch_sampler, 'batch_size', 1)
        return int(size)

    def _per_batch(self) -> int:
        return self._batch_size() * get_world_size()

    def data_position_meta(self) -> Optional[dict]:
        """The checkpoint's ``meta['data_position']``, None without a
        :class:`ResumableSampler`."""
        sampler = self.sampler
        if sampler is None:
            return None
        return self.data_position.meta(sampler.seed, get_world_size(),
                                       self._batch_size())

    def restore_data_position(self, meta: dict) -> str:
        """Start the sampler where the checkpoint with ``meta`` stopped.

        Args:
            meta (dict): The checkpoint's ``meta``.

        Returns:
            str: One line on where training continues, for the log.
        """
        sampler = self.sampler
        if sampler is None:
            return ('exact resume is off (see the warning above): the epoch '
                    'restarts at its first batch')
        saved = meta.get('data_position')
        stream = self.data_position.stream
        if saved is None:
            position = position_from_iters(meta, len(self.dataloader),
                                           self._per_batch(), stream)
            if position is None:
                return ('the checkpoint has no data position and its '
                        'iteration is not inside an epoch: the epoch starts '
                        'at its first batch')
            epoch = int(meta.get('epoch', 0))
            note = (' (the checkpoint was saved without the data position, '
                    'e.g. by mmengine\'s loop: the position follows from its '
                    'iteration, but the samples\' random state differs from '
                    'the run it continues)')
        else:
            position, epoch = int(saved['position']), int(saved['epoch'])
            sampler.seed = int(saved['seed'])
            note = ''
            if int(saved['world_size']) != get_world_size() or int(
                    saved['batch_size']) != self._batch_size():
                note = (
                    f' (saved with world_size {saved["world_size"]} x '
                    f'batch_size {saved["batch_size"]}, now '
                    f'{get_world_size()} x {self._batch_size()}: no sample '
                    'of the epoch is repeated or skipped, but the batches '
                    'are grouped differently, so losses cannot match an '
                    'uninterrupted run exactly)')
        sampler.resume_at(epoch, position)
        where = (f'stream position {position}' if stream else
                 f'epoch {epoch + 1}, sample {position} of '
                 f'{sampler.epoch_end(0)}')
        return f'data continues at {where}{note}'


@LOOPS.register_module()
class ResumableEpochBasedTrainLoop(_ResumableLoop, EpochBasedTrainLoop):
    """``EpochBasedTrainLoop`` that resumes at the batch it stopped at
    (see the module docstring); mmengine's arguments, and:

    Args:
        gt_draws (str): ``'per_sample'`` or ``'stock'``
            (``constants.GT_DRAWS``; the config's
            ``gt_database_draws``). Defaults to ``'per_sample'``.
    """

    def __init__(self, runner, dataloader, *args,
                 gt_draws: str = 'per_sample', **kwargs) -> None:
        super().__init__(
            runner, _prepare_dataloader(runner, _seeded_dataloader(
                runner, dataloader, False, gt_draws)), *args, **kwargs)
        self._init_position(stream=False)
        self._replayed = False

    def _first_batch(self) -> int:
        sampler = self.sampler
        if sampler is None:
            return 0
        sampler.set_epoch(self._epoch)
        start = sampler.start()
        self.data_position = DataPosition(
            epoch=self._epoch, start=start, per_batch=self._per_batch())
        return first_batch_index(len(self.dataloader),
                                 sampler.remaining(start),
                                 self._batch_size(), self.dataloader.drop_last)

    def run_epoch(self) -> None:
        """Train the rest of the epoch (all of it unless resumed inside)."""
        if not self._replayed:
            # The first epoch of this process: a resumed run's hooks redo
            # what they did in the epochs before the checkpoint.
            self._replayed = True
            replay_epoch_hooks(self, self._epoch)
        self.runner.call_hook('before_train_epoch')
        self.runner.model.train()
        for idx, data_batch in enumerate(self.dataloader, self._first_batch()):
            self.run_iter(idx, data_batch)
        # Checkpoints saved at the epoch's end continue with the next one.
        self.data_position = DataPosition(epoch=self._epoch + 1,
                                          per_batch=self._per_batch())
        self.runner.call_hook('after_train_epoch')
        self._epoch += 1

    def run_iter(self, idx, data_batch) -> None:
        """One iteration; its batch counts as trained in the checkpoints
        its ``after_train_iter`` hooks save."""
        self.data_position.batches += 1
        super().run_iter(idx, data_batch)


@LOOPS.register_module()
class ResumableIterBasedTrainLoop(_ResumableLoop, IterBasedTrainLoop):
    """``IterBasedTrainLoop`` that resumes without loading the batches it
    skips (see the module docstring); the same arguments.

    The dataloader's iterator is made again when training starts, once
    the resume position is known (mmengine's ``__init__`` makes one when
    the loop is built, and its workers start then). A
    ``DefaultSampler`` becomes a never-ending ``ResumableSampler``: the
    passes over the data follow one another as before (each reshuffled),
    without mmengine restarting the DataLoader (and its 2 s pause) at each.
    ``gt_draws`` as for :class:`ResumableEpochBasedTrainLoop`.
    """

    def __init__(self, runner, dataloader, *args,
                 gt_draws: str = 'per_sample', **kwargs) -> None:
        super().__init__(
            runner, _prepare_dataloader(runner, _seeded_dataloader(
                runner, dataloader, True, gt_draws)), *args, **kwargs)
        self._init_position(stream=True)

    def run(self):
        """Train up to ``max_iters``, from the resumed iteration on."""
        self.runner.call_hook('before_train')
        self.runner.call_hook('before_train_epoch')
        sampler = self.sampler
        if sampler is not None:
            self.data_position = DataPosition(
                start=sampler.start(), per_batch=self._per_batch(),
                stream=True)
        elif self._iter > 0:
            print_log(
                f'Advance dataloader {self._iter} steps to skip data that '
                'has already been trained', logger='current',
                level=logging.WARNING)
        self.dataloader_iterator = _InfiniteDataloaderIterator(
            self.dataloader)
        if sampler is None:
            for _ in range(self._iter):
                next(self.dataloader_iterator)
        while self._iter < self._max_iters and not self.stop_training:
            self.runner.model.train()
            self.run_iter(next(self.dataloader_iterator))
            self._decide_current_val_interval()
            if (self.runner.val_loop is not None
                    and self._iter >= self.val_begin
                    and (self._iter % self.val_interval == 0
                         or self._iter == self._max_iters)):
                self.runner.val_loop.run()
        self.runner.call_hook('after_train_epoch')
        self.runner.call_hook('after_train')
        return self.runner.model

    def run_iter(self, data_batch) -> None:
        """One iteration; its batch counts as trained in the checkpoints
        its ``after_train_iter`` hooks save."""
        self.data_position.batches += 1
        super().run_iter(data_batch)


def use_exact_resume(cfg: Config) -> Config:
    """Put the resumable loops in place of mmengine's (a row of
    ``engine/run_defaults.py``).

    ``EpochBasedTrainLoop`` / ``IterBasedTrainLoop`` (also as
    ``train_cfg.by_epoch``) become ``ResumableEpochBasedTrainLoop`` /
    ``ResumableIterBasedTrainLoop`` with the same arguments; other loops
    are kept. ``exact_resume = False`` in the config keeps mmengine's
    loops (and with them the replay of a resumed epoch), and the run
    defaults then leave ``PreemptionHook`` out too.
    ``gt_database_draws = 'stock'`` keeps mmdet3d's GT-database draws
    under the resumable loops (their ``gt_draws``; a resume inside an epoch
    then draws other objects than the interrupted run would have); the
    default ``'per_sample'`` draws from each sample's random state.

    Args:
        cfg (Config): Loaded config, changed in place.

    Returns:
        Config: ``cfg`` itself.

    Raises:
        ValueError: If ``gt_database_draws`` is not one of
            ``constants.GT_DRAWS``.
    """
    if cfg.get('exact_resume', True) is False:
        return cfg
    train_cfg = cfg.get('train_cfg')
    if isinstance(train_cfg, dict):
        kind = train_cfg.get('type')
        if kind is None and 'by_epoch' in train_cfg:
            kind = ('EpochBasedTrainLoop' if train_cfg.pop('by_epoch') else
                    'IterBasedTrainLoop')
        if kind in RESUMABLE_LOOPS:
            train_cfg['type'] = RESUMABLE_LOOPS[kind]
            if 'gt_database_draws' in cfg:
                train_cfg['gt_draws'] = _gt_draws(cfg['gt_database_draws'])
    return cfg


def _gt_draws(value) -> str:
    if value not in GT_DRAWS:
        raise ValueError(
            f'config: gt_database_draws = {value!r}. Fix: use one of '
            f'{", ".join(map(repr, GT_DRAWS))}')
    return value
