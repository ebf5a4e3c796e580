"""The tests' one toy training config: a dict, or the file of it that
``tools/train.py`` reads.

:func:`toy_config` builds it; its defaults are the toy of
``tests/helpers/fault_helpers.py``: ``FaultToyModel`` on 24
``FaultToyDataset`` samples in batches of 4, shuffled, 2 DataLoader
workers started by fork, 10 iterations, a checkpoint every 2 (by
iteration), SGD with momentum and the LR halved after iteration 5, seed 0
in deterministic mode, gloo. Its keyword arguments are what the tests'
toys vary; any other keyword sets a top-level key (None: the key is left
out). :func:`write_toy_config` writes it with mmengine's ``Config.dump``.

The toy modules add their own defaults: ``straggler_toys``
(:func:`~tests.helpers.straggler_toys.write_straggler_config`),
``failure_faults``
(:func:`~tests.helpers.failure_faults.write_failure_config`),
``hook_toys`` (:func:`~tests.helpers.hook_toys.write_hook_config`),
``slurm_toy`` (:func:`~tests.helpers.slurm_toy.write_paced_config`),
``resume_cost`` (:func:`~tests.helpers.resume_cost.cost_config`), and the
in-process Runner configs :func:`~tests.helpers.precision_toys.toy_cfg`
and :func:`~tests.helpers.toy_models.runner_cfg`.
"""
import copy
from pathlib import Path
from typing import Optional, Sequence

from mmengine.config import Config

#: The first module of every config's ``custom_imports``.
PLUGIN = 'projects.mmdet3d_plugin'


def toy_config(*,
               imports: Optional[Sequence[str]] = (
                   'tests.helpers.fault_helpers', ),
               dataset: Optional[dict] = None,
               batch_size: int = 4,
               num_workers: int = 2,
               persistent_workers: bool = False,
               shuffle: bool = True,
               collate_fn: Optional[str] = None,
               max_iters: int = 10,
               max_epochs: Optional[int] = None,
               ckpt_interval: Optional[int] = 2,
               lr: float = 0.05,
               momentum: Optional[float] = 0.9,
               log_interval: int = 1,
               dist_timeout: Optional[float] = None,
               **keys) -> dict:
    """The toy training config as a dict.

    Iteration-based; with ``max_epochs`` epoch-based instead (no
    validation), the LR halved after the first epoch, checkpoints still by
    iteration. The other top-level keys and their defaults: ``model =
    dict(type='FaultToyModel')``, ``custom_hooks = []``, ``log_processor =
    dict(by_epoch=False, window_size=1)``, ``randomness = dict(seed=0,
    deterministic=True)``, ``param_scheduler`` (the halving),
    ``default_scope = 'mmdet3d'``, ``log_level = 'INFO'``.

    Args:
        imports (Sequence[str], optional): ``custom_imports`` after
            :data:`PLUGIN`; None: no ``custom_imports`` (a config built in
            the process that imported them). Defaults to
            ``('tests.helpers.fault_helpers',)``.
        dataset (dict, optional): The train dataset. Defaults to
            ``dict(type='FaultToyDataset', size=24)``.
        batch_size (int): Samples per batch. Defaults to 4.
        num_workers (int): DataLoader workers. Defaults to 2.
        persistent_workers (bool): Keep them across epochs.
            Defaults to False.
        shuffle (bool): ``DefaultSampler``'s shuffle. Defaults to True.
        collate_fn (str, optional): The DataLoader's ``collate_fn`` type;
            None: mmengine's default. Defaults to None.
        max_iters (int): Iterations. Defaults to 10.
        max_epochs (int, optional): Train by epoch. Defaults to None.
        ckpt_interval (int, optional): A checkpoint every N iterations;
            None: no ``CheckpointHook``. Defaults to 2.
        lr (float): SGD's learning rate. Defaults to 0.05.
        momentum (float, optional): SGD's momentum; None: not set.
            Defaults to 0.9.
        log_interval (int): ``LoggerHook``'s interval. Defaults to 1.
        dist_timeout (float, optional): The gloo group's timeout in
            seconds; None: mmengine's. Defaults to None.
        **keys: Top-level keys to set or replace (``model``,
            ``custom_hooks``, ``randomness``, ``model_wrapper_cfg``,
            ``work_dir``, ...); None leaves the key out.

    Returns:
        dict: The config (a fresh copy of every argument in it).
    """
    by_epoch = max_epochs is not None
    if by_epoch:
        train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs,
                         val_interval=1000)
    else:
        train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters)
    dataloader = dict(
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=persistent_workers,
        sampler=dict(type='DefaultSampler', shuffle=shuffle),
        dataset=dataset or dict(type='FaultToyDataset', size=24))
    if collate_fn is not None:
        dataloader['collate_fn'] = dict(type=collate_fn)
    optimizer = dict(type='SGD', lr=lr)
    if momentum is not None:
        optimizer['momentum'] = momentum
    dist_cfg = dict(backend='gloo')
    if dist_timeout is not None:
        dist_cfg['timeout'] = dist_timeout
    checkpoint = None if ckpt_interval is None else dict(
        type='CheckpointHook', interval=ckpt_interval, by_epoch=False)
    cfg = dict(
        custom_imports=None if imports is None else dict(
            imports=[PLUGIN, *imports], allow_failed_imports=False),
        default_scope='mmdet3d',
        model=dict(type='FaultToyModel'),
        train_dataloader=dataloader,
        train_cfg=train_cfg,
        optim_wrapper=dict(type='OptimWrapper', optimizer=optimizer),
        param_scheduler=[
            dict(type='MultiStepLR', by_epoch=by_epoch,
                 milestones=[1] if by_epoch else [5], gamma=0.5)
        ],
        default_hooks=dict(
            checkpoint=checkpoint,
            logger=dict(type='LoggerHook', interval=log_interval)),
        custom_hooks=[],
        log_processor=dict(by_epoch=False, window_size=1),
        randomness=dict(seed=0, deterministic=True),
        env_cfg=dict(
            cudnn_benchmark=False,
            mp_cfg=dict(mp_start_method='fork'),
            dist_cfg=dist_cfg),
        log_level='INFO')
    cfg.update(keys)
    return copy.deepcopy(
        {key: value for key, value in cfg.items() if value is not None})


def write_toy_config(path: Path, cfg: Optional[dict] = None,
                     **kwargs) -> Path:
    """Write ``cfg``, by default ``toy_config(**kwargs)``, to the config
    file ``path`` (``Config.dump``: ``dict(...)`` text, keys sorted).

    Args:
        path (Path): Config file (``.py``) to write.
        cfg (dict, optional): The config, e.g. a :func:`toy_config` that
            was changed further. Defaults to None.
        **kwargs: :func:`toy_config`'s arguments, without ``cfg``.

    Returns:
        Path: ``path``.
    """
    if cfg is None:
        cfg = toy_config(**kwargs)
    elif kwargs:
        raise TypeError('write_toy_config: pass cfg or toy_config '
                        f'arguments, not both (got {sorted(kwargs)})')
    Config(cfg).dump(path)
    return path
