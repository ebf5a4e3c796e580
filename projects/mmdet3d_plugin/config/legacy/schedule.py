"""Translate ``lr_config`` and ``momentum_config`` (0.x).

mmcv's LR and momentum updater hooks become ``param_scheduler`` entries
following mmcv 1.x semantics: ``step`` (StepLR / MultiStepLR),
``CosineAnnealing``, ``cyclic`` (two cosine or linear phases) and ``fixed``,
with ``linear`` or ``constant`` warmup in front. Schedulers of a 1.x
``_base_`` of the same kind (LR or momentum) are replaced, the others kept.
Runs after :mod:`.loop`, whose training length the schedulers need.
"""
from typing import Dict, List

from .state import TranslationState


def translate_schedulers(state: TranslationState) -> None:
    """Rewrite ``lr_config`` and ``momentum_config`` into param_scheduler.

    Args:
        state (TranslationState): The translation in progress.

    Raises:
        ValueError: For a policy, warmup or key with no faithful
            translation.
    """
    cfg = state.cfg
    has_lr = 'lr_config' in cfg
    has_momentum = 'momentum_config' in cfg
    if not (has_lr or has_momentum):
        return
    existing = cfg.get('param_scheduler') or []
    if isinstance(existing, dict):
        existing = [existing]
    kept = []
    for scheduler in existing:
        is_momentum = 'Momentum' in scheduler.get('type', '')
        if (is_momentum and has_momentum) or (not is_momentum
                                              and has_lr):
            continue
        kept.append(scheduler)
    new = []
    if has_lr:
        lr_config = state.pop('lr_config')
        if lr_config is not None:
            new += _lr_schedulers(state, dict(lr_config))
        else:
            state.row('lr_config=None', 'param_scheduler', '(constant LR)')
    if has_momentum:
        momentum_config = state.pop('momentum_config')
        if momentum_config is not None:
            new += _momentum_schedulers(state, dict(momentum_config))
    cfg['param_scheduler'] = kept + new


def _lr_schedulers(state: TranslationState, lr_config: Dict) -> List[Dict]:
    """The schedulers for ``lr_config``, warmup first."""
    policy = str(lr_config.pop('policy', 'fixed'))
    key = policy.lower()
    schedulers = _warmup(lr_config, policy)
    # mmcv's default: by_epoch=True, except for the cyclic hook.
    by_epoch = lr_config.pop('by_epoch', key != 'cyclic')
    loop_by_epoch, length = state.loop()
    if by_epoch and loop_by_epoch is False and key != 'fixed':
        raise ValueError(
            f'legacy config: lr_config (policy {policy!r}) is stepped by '
            'epoch (by_epoch=True, the mmcv default) but the runner is '
            'IterBasedRunner; set lr_config.by_epoch=False with steps in '
            'iterations, as 0.x iteration-based configs do.')

    if key == 'fixed':
        pass
    elif key == 'step':
        step = lr_config.pop('step', None)
        if step is None:
            raise ValueError(
                "legacy config: lr_config.policy='step' needs `step` "
                '(an int period or a list of milestones).')
        gamma = lr_config.pop('gamma', 0.1)
        if lr_config.pop('min_lr', None) is not None:
            raise ValueError(
                "legacy config: lr_config.policy='step' with min_lr has "
                'no mmengine scheduler (MultiStepLR does not clamp). '
                'Remove min_lr or write param_scheduler by hand.')
        end = length if length is not None and \
            by_epoch == loop_by_epoch else None
        if isinstance(step, int):
            scheduler = dict(
                type='StepLR', step_size=step, gamma=gamma,
                by_epoch=by_epoch, begin=0)
        else:
            scheduler = dict(
                type='MultiStepLR', milestones=list(step), gamma=gamma,
                by_epoch=by_epoch, begin=0)
        if end is not None:
            scheduler['end'] = end
        schedulers.append(scheduler)
    elif key == 'cosineannealing':
        if length is None:
            raise ValueError(
                "legacy config: lr_config.policy='CosineAnnealing' needs "
                'the training length; add runner = dict(type=..., '
                'max_epochs/max_iters=...) or train_cfg.')
        if by_epoch != loop_by_epoch:
            raise ValueError(
                'legacy config: lr_config.by_epoch differs from the '
                'runner type; write param_scheduler by hand.')
        scheduler = dict(
            type='CosineAnnealingLR', T_max=length, begin=0, end=length,
            by_epoch=by_epoch)
        min_lr = lr_config.pop('min_lr', None)
        min_lr_ratio = lr_config.pop('min_lr_ratio', None)
        if (min_lr is None) == (min_lr_ratio is None):
            raise ValueError(
                "legacy config: lr_config.policy='CosineAnnealing' needs "
                'exactly one of min_lr and min_lr_ratio.')
        if min_lr is not None:
            scheduler['eta_min'] = min_lr
        else:
            scheduler['eta_min_ratio'] = min_lr_ratio
        schedulers.append(scheduler)
    elif key == 'cyclic':
        schedulers += _cyclic(state, lr_config, 'lr_config', 'LR', by_epoch)
    else:
        raise ValueError(
            f'legacy config: lr_config.policy={policy!r} has no '
            'translation (translated: step, cyclic, CosineAnnealing, '
            'fixed). Write param_scheduler by hand, e.g. '
            "[dict(type='PolyLR', eta_min=..., power=..., begin=0, "
            "end=..., by_epoch=...)] for 'poly'; see mmengine's "
            'param_scheduler docs for the others.')
    if lr_config:
        raise ValueError(
            f'legacy config: lr_config (policy {policy!r}) has keys '
            f'{sorted(lr_config)} with no translation; remove them or '
            'write param_scheduler by hand.')
    state.row(f'lr_config(policy={policy!r})', 'param_scheduler',
              [s['type'] for s in schedulers])
    return schedulers


def _warmup(lr_config: Dict, policy: str) -> List[Dict]:
    """The warmup scheduler of ``lr_config``, if it has one."""
    warmup = lr_config.pop('warmup', None)
    iters = lr_config.pop('warmup_iters', 0)
    ratio = lr_config.pop('warmup_ratio', 0.1)
    warmup_by_epoch = lr_config.pop('warmup_by_epoch', False)
    if warmup is None:
        return []
    if warmup == 'linear':
        # mmcv: lr = regular_lr * (1 - (1 - i / W) * (1 - ratio)), i.e.
        # linear from ratio to 1 over W iterations (or epochs).
        scheduler = dict(
            type='LinearLR', start_factor=ratio, end_factor=1.0)
    elif warmup == 'constant':
        scheduler = dict(type='ConstantLR', factor=ratio)
    else:
        raise ValueError(
            f'legacy config: lr_config.warmup={warmup!r} has no '
            "translation (translated: 'linear', 'constant'). Write a "
            'warmup scheduler in param_scheduler by hand.')
    if warmup_by_epoch:
        # Approximate: mmengine's warmup ends one iteration early.
        scheduler.update(begin=0, end=iters, by_epoch=True,
                         convert_to_iter_based=True)
    else:
        # mmengine's LinearLR / ConstantLR reach the end value at step
        # end - 1; mmcv's warmup does at iteration warmup_iters.
        scheduler.update(begin=0, end=iters + 1, by_epoch=False)
    return [scheduler]


def _cyclic(state: TranslationState, conf: Dict, key: str, kind: str,
            by_epoch: bool) -> List[Dict]:
    """mmcv's Cyclic{Lr,Momentum}UpdaterHook as two cosine phases.

    mmcv (by_epoch=False, required) splits the whole run into
    ``cyclic_times`` cycles; each rises from the base value to
    ``base * target_ratio[0]`` over the first ``step_ratio_up`` of the
    cycle and falls to ``base * target_ratio[1]``. The ratios become
    ``eta_min_ratio`` so the phases follow a scaled LR.
    """
    if by_epoch:
        raise ValueError(
            f"legacy config: {key}.policy='cyclic' with by_epoch=True is "
            'rejected by mmcv too; remove by_epoch.')
    ratio = conf.pop('target_ratio', (10, 1e-4) if kind == 'LR' else
                     (0.85 / 0.95, 1))
    if isinstance(ratio, (int, float)):
        ratio = (ratio, ratio / 1e5)
    ratio = tuple(ratio)
    if len(ratio) == 1:
        ratio = (ratio[0], ratio[0] / 1e5)
    if len(ratio) != 2:
        raise ValueError(
            f'legacy config: {key}.target_ratio must have 1 or 2 values, '
            f'got {ratio!r}.')
    cyclic_times = conf.pop('cyclic_times', 1)
    gamma = conf.pop('gamma', 1)
    up = conf.pop('step_ratio_up', 0.4)
    strategy = conf.pop('anneal_strategy', 'cos')
    if cyclic_times != 1 or gamma != 1:
        raise ValueError(
            f'legacy config: {key}.policy=\'cyclic\' with cyclic_times='
            f'{cyclic_times}, gamma={gamma}: only one cycle (the setting '
            'of every mmdet3d 0.x config) is translated. Write '
            'param_scheduler as pairs of schedulers per cycle by hand.')
    if not 0 <= up < 1:
        raise ValueError(
            f'legacy config: {key}.step_ratio_up must be in [0, 1), got '
            f'{up!r}.')
    if strategy not in ('cos', 'linear'):
        raise ValueError(
            f'legacy config: {key}.anneal_strategy={strategy!r} is not '
            "'cos' or 'linear'.")
    loop_by_epoch, length = state.loop()
    if length is None:
        raise ValueError(
            f"legacy config: {key}.policy='cyclic' needs the training "
            'length; add runner = dict(type=..., max_epochs/max_iters=...)'
            ' or train_cfg.')
    if loop_by_epoch:
        # Phases in (possibly fractional) epochs, stepped per iteration:
        # mmengine converts begin/end to int(epochs * epoch_length), as
        # mmcv's int(step_ratio_up * max_iters).
        split = length * up
        if float(split).is_integer():
            split = int(split)
        common = dict(by_epoch=True, convert_to_iter_based=True)
    else:
        split = int(length * up)
        common = dict(by_epoch=False)
    name = 'Momentum' if kind == 'Momentum' else 'LR'
    if strategy == 'cos':
        phases = [
            dict(type=f'CosineAnnealing{name}', eta_min_ratio=ratio[0],
                 begin=0, end=split, **common),
            dict(type=f'CosineAnnealing{name}', eta_min_ratio=ratio[1],
                 begin=split, end=length, **common),
        ]
    else:
        phases = [
            dict(type=f'Linear{name}', start_factor=1.0,
                 end_factor=ratio[0], begin=0, end=split, **common),
            dict(type=f'Linear{name}', start_factor=1.0,
                 end_factor=ratio[1] / ratio[0], begin=split, end=length,
                 **common),
        ]
    if split == 0:
        phases = phases[1:]
    return phases


def _momentum_schedulers(state: TranslationState,
                         conf: Dict) -> List[Dict]:
    """The schedulers for ``momentum_config`` (cyclic only)."""
    policy = str(conf.pop('policy', ''))
    by_epoch = conf.pop('by_epoch', False)
    if policy.lower() != 'cyclic':
        raise ValueError(
            f'legacy config: momentum_config.policy={policy!r} has no '
            "translation (translated: 'cyclic'). Write the momentum "
            "schedulers in param_scheduler by hand, e.g. dict(type="
            "'CosineAnnealingMomentum', ...).")
    schedulers = _cyclic(state, conf, 'momentum_config', 'Momentum',
                         by_epoch)
    if conf:
        raise ValueError(
            f'legacy config: momentum_config has keys {sorted(conf)} '
            'with no translation.')
    state.row("momentum_config(policy='cyclic')", 'param_scheduler',
              [s['type'] for s in schedulers])
    return schedulers
