"""A training config made one that resumes exactly and survives
preemption (the plugin's ``tools/train.py`` applies it to every run)."""
from typing import Optional

from mmengine.config import Config

from ...config.custom_hooks import add_custom_hook
from ...constants import GT_DRAWS

#: mmengine's train loops and the plugin's loops that resume exactly.
RESUMABLE_LOOPS = {
    'EpochBasedTrainLoop': 'mmdet3d.ResumableEpochBasedTrainLoop',
    'mmengine.EpochBasedTrainLoop': 'mmdet3d.ResumableEpochBasedTrainLoop',
    'IterBasedTrainLoop': 'mmdet3d.ResumableIterBasedTrainLoop',
    'mmengine.IterBasedTrainLoop': 'mmdet3d.ResumableIterBasedTrainLoop',
}


def use_exact_resume(cfg: Config) -> Config:
    """Put the resumable loops in place of mmengine's, and add
    ``PreemptionHook`` unless the config has one.

    ``EpochBasedTrainLoop`` / ``IterBasedTrainLoop`` (also as
    ``train_cfg.by_epoch``) become ``ResumableEpochBasedTrainLoop`` /
    ``ResumableIterBasedTrainLoop`` with the same arguments; other loops
    are kept. ``exact_resume = False`` in the config keeps mmengine's
    loops (and with them the replay of a resumed epoch).
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
    return add_custom_hook(cfg, dict(type='mmdet3d.PreemptionHook'))


def _gt_draws(value) -> str:
    if value not in GT_DRAWS:
        raise ValueError(
            f'config: gt_database_draws = {value!r}. Fix: use one of '
            f'{", ".join(map(repr, GT_DRAWS))}')
    return value


def set_checkpoint_minutes(cfg: Config, minutes: Optional[float]) -> Config:
    """``--checkpoint-minutes N``: the checkpoint hook also saves every N
    minutes (``AtomicCheckpointHook(interval_minutes=N)``).

    Args:
        cfg (Config): Config whose checkpoint hook is already the atomic
            one (``use_atomic_checkpoints``), changed in place.
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
    if not isinstance(hook, dict) or hook.get('type') not in (
            'AtomicCheckpointHook', 'mmdet3d.AtomicCheckpointHook'):
        kind = hook.get('type') if isinstance(hook, dict) else hook
        raise ValueError(
            f'train: --checkpoint-minutes needs the checkpoint hook '
            f'AtomicCheckpointHook, but default_hooks.checkpoint is {kind!r}.'
            " Fix: use default_hooks.checkpoint=dict(type='CheckpointHook', "
            '...) (the tools make it atomic) or drop the flag')
    hook['interval_minutes'] = float(minutes)
    return cfg
