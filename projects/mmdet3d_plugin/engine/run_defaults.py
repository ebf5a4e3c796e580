"""What the plugin's tools add to every training config, in one table.

``tools/train.py`` (and with it ``tools/dist_train.sh`` and
``tools/slurm_train.sh``, which run it) prepares a run with
``cli.prepare_run``, which calls :func:`apply_run_defaults` once: each row
of :data:`RUN_DEFAULTS` says what it adds to the config, the setting that
turns it off, and where its code is. A row whose change is more than a
hook added is a function of its capability folder
(``use_atomic_checkpoints``, ``use_exact_resume``); a row that adds a hook
to ``custom_hooks`` is :func:`add_custom_hook` with the hook and its off
key. :func:`run_defaults_table` renders the table as docs/launchers.md
shows it (a test keeps the page equal to it).
"""
import functools
from typing import Callable, NamedTuple, Optional

from mmengine.config import Config

from .atomic_checkpoint.atomic_checkpoint_hook import (set_checkpoint_minutes,
                                                       use_atomic_checkpoints)
from .resume.loops import use_exact_resume


def add_custom_hook(cfg: Config, hook: dict,
                    off_key: Optional[str] = None) -> Config:
    """Append ``hook`` to ``cfg.custom_hooks`` unless an entry has its type
    (with or without the ``mmdet3d.`` scope) or the config sets
    ``off_key`` to False; a config's own entry, with its own arguments, is
    kept.

    Args:
        cfg (Config): Loaded config, changed in place.
        hook (dict): The hook's config, e.g.
            ``dict(type='mmdet3d.PreemptionHook')``.
        off_key (str, optional): The config key whose value False leaves
            the hook out. Defaults to None (always added).

    Returns:
        Config: ``cfg`` itself.
    """
    if off_key is not None and cfg.get(off_key, True) is False:
        return cfg
    name = hook['type'].split('.')[-1]
    hooks = list(cfg.get('custom_hooks') or [])
    if not any(isinstance(h, dict) and h.get('type') in (
            name, f'mmdet3d.{name}') for h in hooks):
        hooks.append(hook)
        cfg.custom_hooks = hooks
    return cfg


class RunDefault(NamedTuple):
    """A row of :data:`RUN_DEFAULTS`.

    Args:
        name (str): What the row gives a run, linked to its docs page
            (markdown, relative to ``docs/``).
        adds (str): The keys, hooks and loops it adds (markdown).
        off (str): The config setting that turns it off (markdown).
        code (str): Its capability folder under the package.
        apply (Callable[[Config], Config]): Changes a config in place and
            returns it; a config that turns the row off is left as it is.
    """
    name: str
    adds: str
    off: str
    code: str
    apply: Callable[[Config], Config]


def _custom_hook(hook: str, off_key: str) -> Callable[[Config], Config]:
    return functools.partial(
        add_custom_hook, hook=dict(type=f'mmdet3d.{hook}'), off_key=off_key)


#: Every change ``tools/train.py`` makes to a training config that its
#: flags do not ask for, in the order it is applied.
RUN_DEFAULTS = (
    RunDefault(
        name='[atomic checkpoints](exact_resume.md#atomic-checkpoints)',
        adds="`default_hooks.checkpoint`: `AtomicCheckpointHook` in place "
        "of mmengine's `CheckpointHook`, its arguments kept "
        '(`--checkpoint-minutes N`: `interval_minutes=N`)',
        off='`default_hooks.checkpoint` of another type, or `None`',
        code='engine/atomic_checkpoint/',
        apply=use_atomic_checkpoints),
    RunDefault(
        name='[exact resume](exact_resume.md)',
        adds='`train_cfg.type`: `ResumableEpochBasedTrainLoop` / '
        "`ResumableIterBasedTrainLoop` in place of mmengine's loops "
        '(`gt_database_draws` as their `gt_draws`)',
        off='`exact_resume = False`',
        code='engine/resume/',
        apply=use_exact_resume),
    RunDefault(
        name='[preemption](exact_resume.md#preemption-loses-nothing)',
        adds="`custom_hooks`: `PreemptionHook`, unless the config's own "
        'entry names it',
        off='`exact_resume = False` (with the loops)',
        code='engine/preemption/',
        apply=_custom_hook('PreemptionHook', 'exact_resume')),
    RunDefault(
        name='[non-finite guard](nonfinite_steps.md)',
        adds="`custom_hooks`: `NonFiniteGuardHook`, unless the config's "
        'own entry names it',
        off='`nonfinite_guard = False`',
        code='engine/nonfinite/',
        apply=_custom_hook('NonFiniteGuardHook', 'nonfinite_guard')),
    RunDefault(
        name='[bad samples](bad_samples.md)',
        adds="`custom_hooks`: `BadSampleHook`, unless the config's own "
        'entry names it',
        off='`skip_bad_samples = False`',
        code='engine/bad_samples/',
        apply=_custom_hook('BadSampleHook', 'skip_bad_samples')),
)


def apply_run_defaults(cfg: Config,
                       checkpoint_minutes: Optional[float] = None) -> Config:
    """Apply every row of :data:`RUN_DEFAULTS` to a training config, in
    order, then ``--checkpoint-minutes``.

    Args:
        cfg (Config): Loaded config, changed in place.
        checkpoint_minutes (float, optional): ``--checkpoint-minutes``:
            the atomic checkpoint hook also saves every N minutes.
            Defaults to None.

    Returns:
        Config: ``cfg`` itself.

    Raises:
        ValueError: For a ``gt_database_draws`` value that is not one of
            ``constants.GT_DRAWS``, or ``checkpoint_minutes`` that is not
            positive or meets another checkpoint hook.
    """
    for row in RUN_DEFAULTS:
        row.apply(cfg)
    return set_checkpoint_minutes(cfg, checkpoint_minutes)


def run_defaults_table() -> str:
    """:data:`RUN_DEFAULTS` as the markdown table of docs/launchers.md.

    Returns:
        str: The table, its lines joined by newlines, no final newline.
    """
    lines = ['| default | what it adds to the config | turned off by | code |',
             '| --- | --- | --- | --- |']
    lines += [f'| {row.name} | {row.adds} | {row.off} | `{row.code}` |'
              for row in RUN_DEFAULTS]
    return '\n'.join(lines)
