"""Translate ``runner``, ``total_epochs`` and ``evaluation`` (0.x).

They become the training loop: ``train_cfg`` (``by_epoch``, ``max_epochs``
or ``max_iters``, ``val_interval``, ``val_begin``), plus ``log_processor``
and the checkpoint hook stepping by iteration for an ``IterBasedRunner``, and
``evaluation.save_best`` on ``default_hooks.checkpoint``. The loop length set
here feeds the schedulers (:mod:`.schedule`) and hooks (:mod:`.hooks`).
"""
from .state import TranslationState


def translate_runner(state: TranslationState) -> None:
    """Rewrite ``runner`` and ``total_epochs`` into ``train_cfg``.

    Args:
        state (TranslationState): The translation in progress.

    Raises:
        ValueError: For a runner type or key with no translation, or a
            runner without its length.
    """
    cfg = state.cfg
    runner = state.pop('runner') if 'runner' in cfg else None
    total_epochs = state.pop('total_epochs') if 'total_epochs' in cfg \
        else None
    if runner is None and total_epochs is None:
        return
    train_cfg = dict(cfg.get('train_cfg') or {})
    if runner is not None:
        runner = dict(runner)
        runner_type = runner.pop('type', 'EpochBasedRunner')
        if runner_type == 'EpochBasedRunner':
            epochs = runner.pop('max_epochs', total_epochs)
            if epochs is None:
                raise ValueError(
                    'legacy config: runner EpochBasedRunner without '
                    'max_epochs; write train_cfg = dict(by_epoch=True, '
                    'max_epochs=N).')
            by_epoch, length = True, epochs
        elif runner_type == 'IterBasedRunner':
            if 'max_iters' not in runner:
                raise ValueError(
                    'legacy config: runner IterBasedRunner without '
                    'max_iters; write train_cfg = dict(by_epoch=False, '
                    'max_iters=N).')
            by_epoch, length = False, runner.pop('max_iters')
        else:
            raise ValueError(
                f'legacy config: runner.type={runner_type!r} has no '
                'translation (known: EpochBasedRunner, IterBasedRunner). '
                'Write train_cfg = dict(type=<a mmengine loop>, ...) and '
                'runner_type=<a registered Runner> by hand.')
        if runner:
            raise ValueError(
                f'legacy config: runner has keys {sorted(runner)} with no '
                'translation; remove them or write train_cfg by hand.')
        old = f'runner(type={runner_type!r})'
    else:
        by_epoch, length = True, total_epochs
        old = 'total_epochs'
    for key in ('type', 'max_epochs', 'max_iters'):
        train_cfg.pop(key, None)
    train_cfg['by_epoch'] = by_epoch
    train_cfg['max_epochs' if by_epoch else 'max_iters'] = length
    train_cfg.setdefault('val_interval', 1)
    cfg['train_cfg'] = train_cfg
    state.row(old, 'train_cfg',
              {k: train_cfg[k] for k in ('by_epoch', 'max_epochs',
                                         'max_iters') if k in train_cfg})
    if not by_epoch:
        processor = dict(cfg.get('log_processor') or {})
        if processor.get('by_epoch', True):
            processor['by_epoch'] = False
            cfg['log_processor'] = processor
            state.row(old, 'log_processor.by_epoch', False)
        checkpoint = (cfg.get('default_hooks') or {}).get('checkpoint')
        if checkpoint is not None and 'by_epoch' not in checkpoint \
                and 'checkpoint_config' not in cfg:
            checkpoint['by_epoch'] = False


def translate_evaluation(state: TranslationState) -> None:
    """Rewrite ``evaluation`` into ``train_cfg`` and the checkpoint hook.

    Args:
        state (TranslationState): The translation in progress.
    """
    evaluation = state.pop_section('evaluation')
    if evaluation is None:
        return
    train_cfg = state.cfg.setdefault('train_cfg', {})
    if 'interval' in evaluation:
        train_cfg['val_interval'] = evaluation.pop('interval')
        state.row('evaluation.interval', 'train_cfg.val_interval',
                  train_cfg['val_interval'])
    if 'start' in evaluation:
        train_cfg['val_begin'] = evaluation.pop('start')
        state.row('evaluation.start', 'train_cfg.val_begin',
                  train_cfg['val_begin'])
    if 'save_best' in evaluation:
        hooks = state.cfg.setdefault('default_hooks', {})
        checkpoint = hooks.setdefault('checkpoint',
                                      dict(type='CheckpointHook'))
        checkpoint['save_best'] = evaluation.pop('save_best')
        if 'rule' in evaluation:
            checkpoint['rule'] = evaluation.pop('rule')
        state.row('evaluation.save_best',
                  'default_hooks.checkpoint.save_best',
                  checkpoint['save_best'])
    for key in sorted(evaluation):
        state.row(f'evaluation.{key}',
                  '(dropped: set val_evaluator / the val pipeline)',
                  evaluation[key])
