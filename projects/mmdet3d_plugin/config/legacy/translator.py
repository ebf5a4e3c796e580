"""Translate mmdet3d 0.x (mmcv 1.x) runtime and schedule keys to mmengine's.

Posts and old configs carry keys that the mmengine line ignores or rejects::

    optimizer = dict(type='AdamW', lr=1e-4, weight_decay=0.01)
    optimizer_config = dict(type='GradientCumulativeOptimizerHook',
                            cumulative_iters=4, grad_clip=dict(max_norm=35))
    fp16 = dict(loss_scale=512.)
    lr_config = dict(policy='cyclic', target_ratio=(10, 1e-4),
                     cyclic_times=1, step_ratio_up=0.4)
    runner = dict(type='EpochBasedRunner', max_epochs=20)

:func:`translate_legacy` rewrites them into ``optim_wrapper``,
``param_scheduler``, ``train_cfg``, ``*_dataloader``, ``default_hooks`` and
``randomness`` following mmcv 1.x semantics, and refuses, naming the key and
what to write instead, what has no faithful mmengine equivalent. A config
that mixes a 1.x ``_base_`` with 0.x keys of its own is merged: the 0.x keys
win where they say something, the rest of the 1.x settings stays.

Model definitions are not translated: take the model and dataset pipeline
from an mmdet3d 1.x config (``_base_``). Dataset dicts get the mechanical
changes only (``classes`` -> ``metainfo``, ``ann_file`` relative to
``data_root``, ``DefaultFormatBundle3D`` + ``Collect3D`` ->
``Pack3DDetInputs``); 0.x info files must be regenerated with mmdet3d 1.x's
``tools/create_data.py`` (or updated with
``tools/dataset_converters/update_infos_to_v2.py``).
"""
import copy
from typing import Any, Dict, List, Optional, Tuple

from mmengine.config import Config

#: Keys of mmcv 1.x configs that :func:`translate_legacy` understands.
LEGACY_KEYS = ('optimizer', 'optimizer_config', 'fp16', 'lr_config',
               'momentum_config', 'runner', 'total_epochs', 'evaluation',
               'checkpoint_config', 'log_config', 'data', 'workflow',
               'dist_params', 'resume_from', 'gpu_ids', 'seed',
               'deterministic', 'cudnn_benchmark', 'mp_start_method',
               'opencv_num_threads')

Row = Tuple[str, str, Any]

_OPTIMIZER_HOOKS = ('OptimizerHook', 'GradientCumulativeOptimizerHook',
                    'Fp16OptimizerHook', 'GradientCumulativeFp16OptimizerHook')
_LOGGER_HOOK_BACKENDS = {
    'TextLoggerHook': None,
    'TensorboardLoggerHook': 'TensorboardVisBackend',
    'WandbLoggerHook': 'WandbVisBackend',
    'MlflowLoggerHook': 'MLflowVisBackend',
}
_FORMAT_TRANSFORMS = ('DefaultFormatBundle3D', 'DefaultFormatBundle',
                      'Collect3D')
_NUS_DATA_PREFIX = dict(
    pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')


class _Translator:
    """Holds the config dict being rewritten and the migration rows."""

    def __init__(self, cfg: Dict):
        self.cfg = cfg
        self.rows: List[Row] = []
        self.backend_args_places: List[str] = []

    def row(self, old: str, new: str, value: Any) -> None:
        self.rows.append((old, new, value))

    # ----------------------------------------------------------- helpers
    def _pop(self, key: str):
        return self.cfg.pop(key)

    def _loop(self) -> Tuple[Optional[bool], Optional[int]]:
        """(by_epoch, max length) of the training loop, if known."""
        train_cfg = self.cfg.get('train_cfg') or {}
        if 'max_epochs' in train_cfg:
            return True, train_cfg['max_epochs']
        if 'max_iters' in train_cfg:
            return False, train_cfg['max_iters']
        return None, None

    # -------------------------------------------------------- optimizer
    def optimizer(self) -> None:
        cfg = self.cfg
        wrapper = copy.deepcopy(cfg.get('optim_wrapper')) or None
        touched = False
        if 'optimizer' in cfg:
            optimizer = self._pop('optimizer')
            if optimizer is not None:
                optimizer = dict(optimizer)
                wrapper = wrapper or dict(type='OptimWrapper')
                for key in ('paramwise_cfg', 'constructor'):
                    if key in optimizer:
                        value = optimizer.pop(key)
                        wrapper[key] = value
                        self.row(f'optimizer.{key}', f'optim_wrapper.{key}',
                                 value)
                wrapper['optimizer'] = _merge_or_replace(
                    wrapper.get('optimizer'), optimizer)
                self.row('optimizer', 'optim_wrapper.optimizer', optimizer)
                touched = True

        if 'optimizer_config' in cfg:
            hook = self._pop('optimizer_config')
            if hook is not None:
                wrapper = self._require_wrapper(wrapper, 'optimizer_config')
                self._optimizer_hook(dict(hook), wrapper)
                touched = True

        if 'fp16' in cfg:
            fp16 = self._pop('fp16')
            if fp16 is not None:
                wrapper = self._require_wrapper(wrapper, 'fp16')
                fp16 = dict(fp16)
                unknown = sorted(set(fp16) - {'loss_scale'})
                if unknown:
                    raise ValueError(
                        f'legacy config: fp16 has keys {unknown} that '
                        'mmengine has no place for; only fp16.loss_scale is '
                        "translated. Use presets = ['fp16'] (static 512) or "
                        "['fp16_dynamic'] instead.")
                self._set_fp16(wrapper, fp16.get('loss_scale', 512.), 'fp16')
                touched = True
        if touched:
            cfg['optim_wrapper'] = wrapper

    def _require_wrapper(self, wrapper, key: str) -> Dict:
        if wrapper is None:
            raise ValueError(
                f'legacy config: `{key}` needs an optimizer, but the config '
                'has neither `optimizer` (0.x) nor `optim_wrapper` (1.x). '
                'Add optimizer = dict(type=..., lr=...) or inherit a 1.x '
                'schedule that defines optim_wrapper.')
        return wrapper

    def _set_fp16(self, wrapper: Dict, loss_scale, old: str) -> None:
        if isinstance(loss_scale, int) and not isinstance(loss_scale, bool):
            loss_scale = float(loss_scale)
        wrapper['type'] = 'AmpOptimWrapper'
        wrapper['dtype'] = 'float16'
        wrapper['loss_scale'] = loss_scale
        self.row(old, "optim_wrapper.type='AmpOptimWrapper'",
                 dict(loss_scale=loss_scale, dtype='float16'))

    def _optimizer_hook(self, hook: Dict, wrapper: Dict) -> None:
        hook_type = hook.pop('type', 'OptimizerHook')
        rows_before = len(self.rows)
        if hook_type not in _OPTIMIZER_HOOKS:
            raise ValueError(
                f'legacy config: optimizer_config.type={hook_type!r} has no '
                f'translation (known: {list(_OPTIMIZER_HOOKS)}). Write '
                'optim_wrapper = dict(type=..., optimizer=..., clip_grad=..., '
                'accumulative_counts=...) by hand.')
        if 'detect_anomalous_params' in hook:
            raise ValueError(
                'legacy config: optimizer_config.detect_anomalous_params '
                'moved to the DDP wrapper in mmengine; remove it and write '
                "model_wrapper_cfg = dict(type='MMDistributedDataParallel', "
                'detect_anomalous_params=True).')
        if 'grad_clip' in hook:
            clip = hook.pop('grad_clip')
            if clip is None:
                if wrapper.pop('clip_grad', None) is not None:
                    self.row('optimizer_config.grad_clip=None',
                             'optim_wrapper.clip_grad (removed)', None)
            else:
                wrapper['clip_grad'] = dict(clip)
                self.row('optimizer_config.grad_clip',
                         'optim_wrapper.clip_grad', dict(clip))
        if 'cumulative_iters' in hook:
            counts = hook.pop('cumulative_iters')
            wrapper['accumulative_counts'] = counts
            self.row('optimizer_config.cumulative_iters',
                     'optim_wrapper.accumulative_counts', counts)
        elif 'Cumulative' in hook_type:
            wrapper.setdefault('accumulative_counts', 1)
        if 'Fp16' in hook_type or 'loss_scale' in hook:
            self._set_fp16(wrapper, hook.pop('loss_scale', 512.),
                           f'optimizer_config.type={hook_type!r}')
        for key in ('distributed', 'coalesce', 'bucket_size_mb'):
            if key in hook:
                self.row(f'optimizer_config.{key}', '(dropped: mmengine '
                         'handles it)', hook.pop(key))
        if hook:
            raise ValueError(
                f'legacy config: optimizer_config has keys {sorted(hook)} '
                'with no translation; remove them or write optim_wrapper by '
                'hand.')
        if len(self.rows) == rows_before:
            self.row('optimizer_config', 'optim_wrapper', '(no change)')

    # ---------------------------------------------------- runner / loop
    def runner(self) -> None:
        cfg = self.cfg
        runner = self._pop('runner') if 'runner' in cfg else None
        total_epochs = self._pop('total_epochs') if 'total_epochs' in cfg \
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
        self.row(old, 'train_cfg',
                 {k: train_cfg[k] for k in ('by_epoch', 'max_epochs',
                                            'max_iters') if k in train_cfg})
        if not by_epoch:
            processor = dict(cfg.get('log_processor') or {})
            if processor.get('by_epoch', True):
                processor['by_epoch'] = False
                cfg['log_processor'] = processor
                self.row(old, 'log_processor.by_epoch', False)
            checkpoint = (cfg.get('default_hooks') or {}).get('checkpoint')
            if checkpoint is not None and 'by_epoch' not in checkpoint \
                    and 'checkpoint_config' not in cfg:
                checkpoint['by_epoch'] = False

    def evaluation(self) -> None:
        if 'evaluation' not in self.cfg:
            return
        evaluation = self._pop('evaluation')
        if evaluation is None:
            return
        evaluation = dict(evaluation)
        train_cfg = self.cfg.setdefault('train_cfg', {})
        if 'interval' in evaluation:
            train_cfg['val_interval'] = evaluation.pop('interval')
            self.row('evaluation.interval', 'train_cfg.val_interval',
                     train_cfg['val_interval'])
        if 'start' in evaluation:
            train_cfg['val_begin'] = evaluation.pop('start')
            self.row('evaluation.start', 'train_cfg.val_begin',
                     train_cfg['val_begin'])
        if 'save_best' in evaluation:
            hooks = self.cfg.setdefault('default_hooks', {})
            checkpoint = hooks.setdefault('checkpoint',
                                          dict(type='CheckpointHook'))
            checkpoint['save_best'] = evaluation.pop('save_best')
            if 'rule' in evaluation:
                checkpoint['rule'] = evaluation.pop('rule')
            self.row('evaluation.save_best',
                     'default_hooks.checkpoint.save_best',
                     checkpoint['save_best'])
        for key in sorted(evaluation):
            self.row(f'evaluation.{key}',
                     '(dropped: set val_evaluator / the val pipeline)',
                     evaluation[key])

    # ------------------------------------------------------- schedulers
    def schedulers(self) -> None:
        cfg = self.cfg
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
            lr_config = self._pop('lr_config')
            if lr_config is not None:
                new += self._lr_schedulers(dict(lr_config))
            else:
                self.row('lr_config=None', 'param_scheduler', '(constant LR)')
        if has_momentum:
            momentum_config = self._pop('momentum_config')
            if momentum_config is not None:
                new += self._momentum_schedulers(dict(momentum_config))
        cfg['param_scheduler'] = kept + new

    def _lr_schedulers(self, lr_config: Dict) -> List[Dict]:
        policy = str(lr_config.pop('policy', 'fixed'))
        key = policy.lower()
        schedulers = self._warmup(lr_config, policy)
        # mmcv's default: by_epoch=True, except for the cyclic hook.
        by_epoch = lr_config.pop('by_epoch', key != 'cyclic')
        loop_by_epoch, length = self._loop()
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
            schedulers += self._cyclic(lr_config, 'lr_config', 'LR', by_epoch)
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
        self.row(f'lr_config(policy={policy!r})', 'param_scheduler',
                 [s['type'] for s in schedulers])
        return schedulers

    def _warmup(self, lr_config: Dict, policy: str) -> List[Dict]:
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

    def _cyclic(self, conf: Dict, key: str, kind: str,
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
        loop_by_epoch, length = self._loop()
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

    def _momentum_schedulers(self, conf: Dict) -> List[Dict]:
        policy = str(conf.pop('policy', ''))
        by_epoch = conf.pop('by_epoch', False)
        if policy.lower() != 'cyclic':
            raise ValueError(
                f'legacy config: momentum_config.policy={policy!r} has no '
                "translation (translated: 'cyclic'). Write the momentum "
                "schedulers in param_scheduler by hand, e.g. dict(type="
                "'CosineAnnealingMomentum', ...).")
        schedulers = self._cyclic(conf, 'momentum_config', 'Momentum',
                                  by_epoch)
        if conf:
            raise ValueError(
                f'legacy config: momentum_config has keys {sorted(conf)} '
                'with no translation.')
        self.row("momentum_config(policy='cyclic')", 'param_scheduler',
                 [s['type'] for s in schedulers])
        return schedulers

    # ------------------------------------------------------------ hooks
    def checkpoint(self) -> None:
        if 'checkpoint_config' not in self.cfg:
            return
        conf = self._pop('checkpoint_config')
        if conf is None:
            return
        conf = dict(conf)
        for key in ('create_symlink', 'meta'):
            if key in conf:
                self.row(f'checkpoint_config.{key}', '(dropped)',
                         conf.pop(key))
        hooks = self.cfg.setdefault('default_hooks', {})
        hook = dict(hooks.get('checkpoint') or dict(type='CheckpointHook'))
        hook.update(conf)
        by_epoch, _ = self._loop()
        if by_epoch is False:
            hook.setdefault('by_epoch', False)
        hooks['checkpoint'] = hook
        self.row('checkpoint_config', 'default_hooks.checkpoint', conf)

    def log_config(self) -> None:
        if 'log_config' not in self.cfg:
            return
        conf = self._pop('log_config')
        if conf is None:
            return
        conf = dict(conf)
        hooks = self.cfg.setdefault('default_hooks', {})
        logger = dict(hooks.get('logger') or dict(type='LoggerHook'))
        if 'interval' in conf:
            logger['interval'] = conf.pop('interval')
            self.row('log_config.interval', 'default_hooks.logger.interval',
                     logger['interval'])
        hooks['logger'] = logger
        backends = []
        for hook in conf.pop('hooks', []) or []:
            hook = dict(hook)
            hook_type = hook.pop('type', None)
            if hook_type not in _LOGGER_HOOK_BACKENDS:
                raise ValueError(
                    f'legacy config: log_config.hooks type {hook_type!r} has '
                    f'no translation (known: {list(_LOGGER_HOOK_BACKENDS)}). '
                    'Add a vis backend to visualizer.vis_backends by hand.')
            backend = _LOGGER_HOOK_BACKENDS[hook_type]
            if backend is None:
                continue
            entry = dict(type=backend)
            if 'init_kwargs' in hook:
                entry['init_kwargs'] = hook['init_kwargs']
            backends.append(entry)
            self.row(f'log_config.hooks[{hook_type}]',
                     'visualizer.vis_backends', entry)
        if backends:
            visualizer = dict(
                self.cfg.get('visualizer') or dict(
                    type='Det3DLocalVisualizer',
                    vis_backends=[dict(type='LocalVisBackend')],
                    name='visualizer'))
            visualizer['vis_backends'] = list(
                visualizer.get('vis_backends') or []) + backends
            self.cfg['visualizer'] = visualizer
        for key in sorted(conf):
            self.row(f'log_config.{key}', '(dropped)', conf[key])

    # ------------------------------------------------------------- data
    def data(self) -> None:
        if 'data' not in self.cfg:
            return
        data = self._pop('data')
        if data is None:
            return
        data = copy.deepcopy(dict(data))
        batch = data.pop('samples_per_gpu', None)
        workers = data.pop('workers_per_gpu', None)
        persistent = data.pop('persistent_workers', None)
        extra = {
            split: dict(data.pop(f'{split}_dataloader', None) or {})
            for split in ('train', 'val', 'test')
        }
        for split in ('train', 'val', 'test'):
            key = f'{split}_dataloader'
            if split == 'train':
                wanted = batch is not None or workers is not None
            else:
                wanted = workers is not None and key in self.cfg
            if not (wanted or split in data or extra[split]):
                continue
            loader = dict(self.cfg.get(key) or {})
            dataset = data.pop(split, None)
            split_batch = extra[split].pop('samples_per_gpu', None)
            split_workers = extra[split].pop('workers_per_gpu', None)
            if isinstance(dataset, dict):
                dataset = dict(dataset)
                split_batch = dataset.pop('samples_per_gpu', split_batch)
            if split == 'train':
                split_batch = split_batch if split_batch is not None \
                    else batch
            elif split_batch is None and not loader:
                split_batch = 1  # mmdet3d 0.x tools tested one sample/GPU
            if split_batch is not None:
                loader['batch_size'] = split_batch
                self.row('data.samples_per_gpu' if split == 'train' else
                         f'data.{split}.samples_per_gpu',
                         f'{key}.batch_size', split_batch)
            split_workers = split_workers if split_workers is not None \
                else workers
            if split_workers is not None:
                loader['num_workers'] = split_workers
                loader['persistent_workers'] = bool(
                    split_workers > 0 if persistent is None else
                    persistent and split_workers > 0)
                self.row('data.workers_per_gpu', f'{key}.num_workers',
                         split_workers)
            loader.setdefault(
                'sampler', dict(type='DefaultSampler',
                                shuffle=split == 'train'))
            if split != 'train':
                loader.setdefault('drop_last', False)
            if 'shuffle' in extra[split]:
                loader['sampler'] = dict(
                    loader['sampler'], shuffle=extra[split].pop('shuffle'))
            loader.update(extra[split])
            if dataset is not None:
                if isinstance(dataset, (list, tuple)):
                    dataset = dict(
                        type='ConcatDataset',
                        datasets=[dict(d) for d in dataset])
                dataset = self._dataset(dataset, f'data.{split}')
                loader['dataset'] = _merge_or_replace(
                    loader.get('dataset'), dataset)
                self.row(f'data.{split}', f'{key}.dataset',
                         loader['dataset'].get('type'))
            if not loader.get('dataset'):
                raise ValueError(
                    f'legacy config: data sets the {split} loader, but there '
                    f'is no data.{split} dataset and no {key} to update; add '
                    f'data.{split} = dict(type=..., ...) or inherit a 1.x '
                    f'config with {key}.')
            self.cfg[key] = loader
            if split in ('val', 'test'):
                self._evaluator(split, loader)
        if data:
            raise ValueError(
                f'legacy config: data has keys {sorted(data)} with no '
                'translation; move them into train_dataloader / '
                'val_dataloader / test_dataloader by hand.')

    def _evaluator(self, split: str, loader: Dict) -> None:
        cfg = self.cfg
        key = f'{split}_evaluator'
        cfg.setdefault(f'{split}_cfg', {})
        if key in cfg:
            return
        other = 'test_evaluator' if split == 'val' else 'val_evaluator'
        if other in cfg:
            cfg[key] = copy.deepcopy(cfg[other])
            return
        dataset = loader.get('dataset') or {}
        while 'dataset' in dataset:
            dataset = dataset['dataset']
        dataset_type = dataset.get('type')
        root = dataset.get('data_root') or ''
        ann_file = dataset.get('ann_file') or ''
        if dataset_type == 'NuScenesDataset':
            evaluator = dict(
                type='NuScenesMetric', data_root=root,
                ann_file=_join(root, ann_file), metric='bbox')
        elif dataset_type == 'KittiDataset':
            evaluator = dict(
                type='KittiMetric', ann_file=_join(root, ann_file),
                metric='bbox')
        else:
            raise ValueError(
                f'legacy config: data.{split} ({dataset_type}) needs an '
                f'evaluator in mmengine, and none can be inferred for this '
                f'dataset type; add {key} = dict(type=<a metric>, ...) to '
                'the config.')
        cfg[key] = evaluator
        self.row(f'data.{split}.type={dataset_type!r}', key, evaluator)

    def _dataset(self, dataset: Dict, where: str) -> Dict:
        dataset = dict(dataset)
        if 'dataset' in dataset:
            dataset['dataset'] = self._dataset(dataset['dataset'],
                                               f'{where}.dataset')
        if 'datasets' in dataset:
            dataset['datasets'] = [
                self._dataset(d, f'{where}.datasets[{i}]')
                for i, d in enumerate(dataset['datasets'])
            ]
        if 'classes' in dataset:
            classes = dataset.pop('classes')
            metainfo = dict(dataset.get('metainfo') or {})
            metainfo['classes'] = classes
            dataset['metainfo'] = metainfo
            self.row(f'{where}.classes', f'{where}.metainfo.classes',
                     f'{len(classes)} classes')
        root = dataset.get('data_root')
        ann_file = dataset.get('ann_file')
        if isinstance(root, str) and isinstance(ann_file, str) and root and \
                ann_file.startswith(root):
            # 0.x joined nothing; mmengine joins data_root and ann_file.
            relative = ann_file[len(root):].lstrip('/')
            dataset['ann_file'] = relative
            self.row(f'{where}.ann_file', f'{where}.ann_file (relative to '
                     'data_root)', relative)
        if dataset.get('type') == 'NuScenesDataset' and \
                'data_prefix' not in dataset:
            dataset['data_prefix'] = dict(_NUS_DATA_PREFIX)
            self.row(f'{where}.type=NuScenesDataset', f'{where}.data_prefix',
                     dataset['data_prefix'])
        dataset = self._backend_args(dataset, where)
        if 'pipeline' in dataset:
            dataset['pipeline'] = self._pipeline(dataset['pipeline'],
                                                 f'{where}.pipeline')
        return dataset

    def _pipeline(self, pipeline, where: str):
        """Replace 0.x formatting (bundle + collect) with Pack3DDetInputs."""
        if not isinstance(pipeline, (list, tuple)):
            return pipeline
        out = []
        pack = None
        for step in pipeline:
            step = self._backend_args(dict(step), where)
            if step.get('type') == 'MultiScaleFlipAug3D' and \
                    'transforms' in step:
                inner = []
                for t in step['transforms']:
                    if dict(t).get('type') in _FORMAT_TRANSFORMS:
                        if t['type'] == 'Collect3D':
                            pack = dict(type='Pack3DDetInputs',
                                        keys=list(t['keys']))
                    else:
                        inner.append(t)
                step['transforms'] = inner
                out.append(step)
            elif step.get('type') in _FORMAT_TRANSFORMS:
                if step['type'] == 'Collect3D':
                    pack = dict(type='Pack3DDetInputs',
                                keys=list(step['keys']))
                    extra = sorted(set(step) - {'type', 'keys'})
                    for key in extra:
                        pack[key] = step[key]
            else:
                out.append(step)
        if pack is not None:
            out.append(pack)
            self.row(f'{where}: DefaultFormatBundle3D + Collect3D',
                     'Pack3DDetInputs', pack['keys'])
        return out

    def _backend_args(self, step: Dict, where: str) -> Dict:
        """``file_client_args`` (mmcv FileClient) -> ``backend_args``."""
        if 'file_client_args' in step:
            args = step.pop('file_client_args')
            args = None if not args or dict(args).get('backend') == 'disk' \
                else dict(args)
            step['backend_args'] = args
            self.backend_args_places.append(where)
        for key in ('db_sampler', ):
            if isinstance(step.get(key), dict):
                step[key] = self._backend_args(dict(step[key]),
                                               f'{where}.{key}')
        if isinstance(step.get('transforms'), list):
            step['transforms'] = [
                self._backend_args(dict(t), f'{where}.transforms')
                for t in step['transforms']
            ]
        return step

    def top_level_pipelines(self) -> None:
        for key in ('train_pipeline', 'test_pipeline', 'eval_pipeline'):
            pipeline = self.cfg.get(key)
            if isinstance(pipeline, list) and any(
                    'file_client_args' in dict(s)
                    or dict(s).get('type') in _FORMAT_TRANSFORMS or any(
                        dict(t).get('type') in _FORMAT_TRANSFORMS
                        or 'file_client_args' in dict(t)
                        for t in dict(s).get('transforms', []) or [])
                    for s in pipeline):
                self.cfg[key] = self._pipeline(pipeline, key)

    # ---------------------------------------------------------- runtime
    def runtime(self) -> None:
        cfg = self.cfg
        if 'default_scope' not in cfg:
            # mmdet3d 1.x configs name their registry scope; 0.x had none.
            cfg['default_scope'] = 'mmdet3d'
            self.row('(none)', 'default_scope', 'mmdet3d')
        if isinstance(cfg.get('db_sampler'), dict) and \
                'file_client_args' in cfg['db_sampler']:
            cfg['db_sampler'] = self._backend_args(
                dict(cfg['db_sampler']), 'db_sampler')
        if 'workflow' in cfg:
            self.row('workflow', '(dropped: validation runs every '
                     'train_cfg.val_interval)', self._pop('workflow'))
        if 'gpu_ids' in cfg:
            self.row('gpu_ids', '(dropped: set by the launcher)',
                     self._pop('gpu_ids'))
        env = None
        if 'dist_params' in cfg:
            params = dict(self._pop('dist_params') or {})
            env = dict(cfg.get('env_cfg') or {})
            dist_cfg = dict(env.get('dist_cfg') or {})
            if 'port' in params:
                self.row('dist_params.port', '(dropped: set MASTER_PORT or '
                         'tools/dist_train.sh PORT=...)', params.pop('port'))
            dist_cfg.update(params)
            env['dist_cfg'] = dist_cfg
            self.row('dist_params', 'env_cfg.dist_cfg', params)
        for key, path in (('cudnn_benchmark', ('cudnn_benchmark', )),
                          ('mp_start_method', ('mp_cfg', 'mp_start_method')),
                          ('opencv_num_threads', ('mp_cfg',
                                                  'opencv_num_threads'))):
            if key in cfg:
                env = env if env is not None else dict(
                    cfg.get('env_cfg') or {})
                value = self._pop(key)
                target = env
                for part in path[:-1]:
                    target[part] = dict(target.get(part) or {})
                    target = target[part]
                target[path[-1]] = value
                self.row(key, 'env_cfg.' + '.'.join(path), value)
        if env is not None:
            cfg['env_cfg'] = env
        if 'resume_from' in cfg:
            resume_from = self._pop('resume_from')
            if resume_from is not None:
                cfg['load_from'] = resume_from
                cfg['resume'] = True
                self.row('resume_from', 'load_from + resume=True',
                         resume_from)
        randomness = None
        for key in ('seed', 'deterministic'):
            if key in cfg:
                value = self._pop(key)
                randomness = randomness if randomness is not None else dict(
                    cfg.get('randomness') or {})
                randomness[key] = value
                self.row(key, f'randomness.{key}', value)
        if randomness is not None:
            cfg['randomness'] = randomness
        if 'find_unused_parameters' in cfg and cfg.get('model_wrapper_cfg'):
            value = self._pop('find_unused_parameters')
            cfg['model_wrapper_cfg']['find_unused_parameters'] = value
            self.row('find_unused_parameters',
                     'model_wrapper_cfg.find_unused_parameters', value)


def _merge_or_replace(base: Optional[Dict], new: Dict) -> Dict:
    """Merge ``new`` into ``base`` if they are the same type, else replace.

    A 0.x dict without ``type`` (a partial override) or with the same type
    as the 1.x one updates it key by key; another type replaces it.
    """
    if not base or ('type' in new and new['type'] != base.get('type')):
        return copy.deepcopy(new)
    merged = copy.deepcopy(dict(base))
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_or_replace(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _join(root: str, path: str) -> str:
    if not root or path.startswith('/') or path.startswith(root):
        return path
    return root.rstrip('/') + '/' + path


def has_legacy_keys(cfg) -> bool:
    """Whether ``cfg`` holds any key of :data:`LEGACY_KEYS`.

    ``find_unused_parameters`` beside a ``model_wrapper_cfg`` counts too.
    """
    return any(key in cfg for key in LEGACY_KEYS) or (
        'find_unused_parameters' in cfg and bool(cfg.get('model_wrapper_cfg')))


def translate_legacy(cfg: Config) -> Tuple[Config, List[Row]]:
    """Translate 0.x keys of ``cfg`` to mmengine keys.

    Args:
        cfg (Config): A loaded config; left unchanged.

    Returns:
        tuple[Config, list[tuple[str, str, Any]]]: The translated config (a
        new object, or ``cfg`` itself when nothing was translated) and the
        rows ``(old key, new key, value)`` of the migration table.

    Raises:
        ValueError: For a 0.x setting with no faithful translation; the
            message names the key and what to write instead.

    Examples:
        >>> cfg = Config(dict(
        ...     optimizer=dict(type='SGD', lr=0.01),
        ...     optimizer_config=dict(
        ...         type='GradientCumulativeOptimizerHook',
        ...         cumulative_iters=4),
        ...     fp16=dict(loss_scale=512.)))
        >>> cfg, rows = translate_legacy(cfg)
        >>> cfg.optim_wrapper.accumulative_counts, cfg.optim_wrapper.type
        (4, 'AmpOptimWrapper')
    """
    if not has_legacy_keys(cfg):
        return cfg, []
    translator = _Translator(copy.deepcopy(cfg.to_dict()))
    # Order matters: the loop length feeds schedulers and checkpoint hooks.
    translator.optimizer()
    translator.runner()
    translator.evaluation()
    translator.schedulers()
    translator.checkpoint()
    translator.log_config()
    translator.data()
    translator.top_level_pipelines()
    translator.runtime()
    places = translator.backend_args_places
    if places:
        translator.row(
            f'file_client_args ({len(places)}x, in '
            f'{", ".join(sorted(set(places)))})', 'backend_args',
            '(disk -> None)')
    out = Config(translator.cfg, filename=cfg.filename)
    return out, translator.rows


def format_migration_table(rows: List[Row], width: int = 60) -> str:
    """Render migration rows as a three-column text table.

    Args:
        rows (list[tuple]): ``(old key, new key, value)`` rows.
        width (int): Longest value shown; longer ones are cut with '...'.
            Defaults to 60.

    Returns:
        str: The table, one row a line, with a header.
    """
    def cut(value) -> str:
        text = value if isinstance(value, str) else repr(value)
        return text if len(text) <= width else text[:width - 3] + '...'

    cells = [('0.x key', 'mmengine key', 'value')] + [
        (str(old), str(new), cut(value)) for old, new, value in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    lines = []
    for i, cell in enumerate(cells):
        lines.append('  '.join(c.ljust(w) for c, w in zip(cell, widths))
                     .rstrip())
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)
