"""Translate the 0.x ``data`` dict, pipelines and ``file_client_args``.

``data`` becomes ``train_dataloader``, ``val_dataloader`` and
``test_dataloader`` (``samples_per_gpu`` -> ``batch_size``,
``workers_per_gpu`` -> ``num_workers``, a list of datasets ->
``ConcatDataset``), with ``val_evaluator`` / ``test_evaluator`` inferred for
nuScenes and KITTI. Datasets, wrapped ones included, get the mechanical
changes only: ``classes`` -> ``metainfo``, ``ann_file`` relative to
``data_root``, nuScenes ``data_prefix``, ``DefaultFormatBundle3D`` +
``Collect3D`` -> ``Pack3DDetInputs`` and ``file_client_args`` ->
``backend_args``.
"""
import copy
from typing import Dict

from .state import TranslationState, merge_or_replace

_FORMAT_TRANSFORMS = ('DefaultFormatBundle3D', 'DefaultFormatBundle',
                      'Collect3D')
#: Keys that mmdet3d 0.x's ``build_dataset`` read from each dataset
#: wrapper; it ignored the rest (left there by merging a wrapper over a
#: ``_base_`` dataset), which 1.x's wrappers would refuse.
_WRAPPER_KEYS = {
    'CBGSDataset': ('type', 'dataset'),
    'RepeatDataset': ('type', 'dataset', 'times'),
    'ClassBalancedDataset': ('type', 'dataset', 'oversample_thr'),
    'ConcatDataset': ('type', 'datasets'),
}
_NUS_DATA_PREFIX = dict(
    pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')


def translate_data(state: TranslationState) -> None:
    """Rewrite ``data`` into the dataloaders and evaluators.

    Args:
        state (TranslationState): The translation in progress.

    Raises:
        ValueError: For a loader without a dataset, a val/test dataset
            whose evaluator cannot be inferred, or a key of ``data`` with
            no translation.
    """
    data = state.pop_section('data')
    if data is None:
        return
    data = copy.deepcopy(data)
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
            wanted = workers is not None and key in state.cfg
        if not (wanted or split in data or extra[split]):
            continue
        loader = dict(state.cfg.get(key) or {})
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
            state.row('data.samples_per_gpu' if split == 'train' else
                      f'data.{split}.samples_per_gpu',
                      f'{key}.batch_size', split_batch)
        split_workers = split_workers if split_workers is not None \
            else workers
        if split_workers is not None:
            loader['num_workers'] = split_workers
            loader['persistent_workers'] = bool(
                split_workers > 0 if persistent is None else
                persistent and split_workers > 0)
            state.row('data.workers_per_gpu', f'{key}.num_workers',
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
            dataset = _dataset(state, dataset, f'data.{split}')
            loader['dataset'] = merge_or_replace(
                loader.get('dataset'), dataset)
            state.row(f'data.{split}', f'{key}.dataset',
                      loader['dataset'].get('type'))
        if not loader.get('dataset'):
            raise ValueError(
                f'legacy config: data sets the {split} loader, but there '
                f'is no data.{split} dataset and no {key} to update; add '
                f'data.{split} = dict(type=..., ...) or inherit a 1.x '
                f'config with {key}.')
        state.cfg[key] = loader
        if split in ('val', 'test'):
            _evaluator(state, split, loader)
    if data:
        raise ValueError(
            f'legacy config: data has keys {sorted(data)} with no '
            'translation; move them into train_dataloader / '
            'val_dataloader / test_dataloader by hand.')


def _evaluator(state: TranslationState, split: str, loader: Dict) -> None:
    """Set ``{split}_evaluator`` from the dataset of ``loader``."""
    cfg = state.cfg
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
    state.row(f'data.{split}.type={dataset_type!r}', key, evaluator)


def _dataset(state: TranslationState, dataset: Dict, where: str) -> Dict:
    """The dataset dict ``dataset`` (at ``where``) with 1.x keys."""
    dataset = dict(dataset)
    kept = _WRAPPER_KEYS.get(dataset.get('type'))
    if kept:
        ignored = sorted(set(dataset) - set(kept))
        if ignored:
            for key in ignored:
                dataset.pop(key)
            state.row(f'{where}: {", ".join(ignored)}',
                      f"(dropped: 0.x ignored them beside "
                      f"type={dataset['type']!r})", '')
    if 'dataset' in dataset:
        dataset['dataset'] = _dataset(state, dataset['dataset'],
                                      f'{where}.dataset')
    if 'datasets' in dataset:
        dataset['datasets'] = [
            _dataset(state, d, f'{where}.datasets[{i}]')
            for i, d in enumerate(dataset['datasets'])
        ]
    if 'classes' in dataset:
        classes = dataset.pop('classes')
        metainfo = dict(dataset.get('metainfo') or {})
        metainfo['classes'] = classes
        dataset['metainfo'] = metainfo
        state.row(f'{where}.classes', f'{where}.metainfo.classes',
                  f'{len(classes)} classes')
    root = dataset.get('data_root')
    ann_file = dataset.get('ann_file')
    if isinstance(root, str) and isinstance(ann_file, str) and root and \
            ann_file.startswith(root):
        # 0.x joined nothing; mmengine joins data_root and ann_file.
        relative = ann_file[len(root):].lstrip('/')
        dataset['ann_file'] = relative
        state.row(f'{where}.ann_file', f'{where}.ann_file (relative to '
                  'data_root)', relative)
    if dataset.get('type') == 'NuScenesDataset' and \
            'data_prefix' not in dataset:
        dataset['data_prefix'] = dict(_NUS_DATA_PREFIX)
        state.row(f'{where}.type=NuScenesDataset', f'{where}.data_prefix',
                  dataset['data_prefix'])
    dataset = backend_args(state, dataset, where)
    if 'pipeline' in dataset:
        dataset['pipeline'] = _pipeline(state, dataset['pipeline'],
                                        f'{where}.pipeline')
    return dataset


def _pipeline(state: TranslationState, pipeline, where: str):
    """Replace 0.x formatting (bundle + collect) with Pack3DDetInputs."""
    if not isinstance(pipeline, (list, tuple)):
        return pipeline
    out = []
    pack = None
    for step in pipeline:
        step = backend_args(state, dict(step), where)
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
        state.row(f'{where}: DefaultFormatBundle3D + Collect3D',
                  'Pack3DDetInputs', pack['keys'])
    return out


def backend_args(state: TranslationState, step: Dict, where: str) -> Dict:
    """``file_client_args`` (mmcv FileClient) -> ``backend_args``, in
    ``step`` and in every dict nested in it (``db_sampler``,
    ``db_sampler.points_loader``, ``transforms``, ...)."""
    if 'file_client_args' in step:
        args = step.pop('file_client_args')
        args = None if not args or dict(args).get('backend') == 'disk' \
            else dict(args)
        step['backend_args'] = args
        state.backend_args_places.append(where)
    for key, value in step.items():
        if isinstance(value, dict):
            step[key] = backend_args(state, dict(value), f'{where}.{key}')
        elif isinstance(value, (list, tuple)) and value and all(
                isinstance(v, dict) for v in value):
            step[key] = [
                backend_args(state, dict(v), f'{where}.{key}')
                for v in value
            ]
    return step


def translate_top_level_pipelines(state: TranslationState) -> None:
    """Rewrite ``train_pipeline``, ``test_pipeline`` and ``eval_pipeline``.

    Only pipelines with 0.x formatting or ``file_client_args`` change.

    Args:
        state (TranslationState): The translation in progress.
    """
    for key in ('train_pipeline', 'test_pipeline', 'eval_pipeline'):
        pipeline = state.cfg.get(key)
        if not isinstance(pipeline, list):
            continue
        formatting = any(
            dict(s).get('type') in _FORMAT_TRANSFORMS or any(
                dict(t).get('type') in _FORMAT_TRANSFORMS
                for t in dict(s).get('transforms', []) or [])
            for s in pipeline)
        if formatting or has_file_client_args(pipeline):
            state.cfg[key] = _pipeline(state, pipeline, key)


def has_file_client_args(value) -> bool:
    """Whether ``file_client_args`` is a key anywhere in ``value``."""
    if isinstance(value, dict):
        return 'file_client_args' in value or any(
            has_file_client_args(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_file_client_args(v) for v in value)
    return False


def _join(root: str, path: str) -> str:
    """``path`` under ``root`` unless absolute or already under it."""
    if not root or path.startswith('/') or path.startswith(root):
        return path
    return root.rstrip('/') + '/' + path
