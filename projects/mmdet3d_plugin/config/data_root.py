"""Point a config's datasets and evaluators at another copy of the data."""
import os.path as osp
from typing import Iterator, Union

from mmengine.config import Config, ConfigDict

SECTIONS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
EVALUATORS = ('val_evaluator', 'test_evaluator')


def unwrap_datasets(dataset) -> Iterator[dict]:
    """A dataset config and those it wraps (CBGSDataset, ConcatDataset)."""
    if not isinstance(dataset, dict):
        return
    yield dataset
    inner = dataset.get('dataset')
    if isinstance(inner, dict):
        yield from unwrap_datasets(inner)
    for inner in dataset.get('datasets') or []:
        yield from unwrap_datasets(inner)


def _move_under(entry: dict, root: str, file_key: str) -> None:
    """Set ``entry``'s ``data_root`` (if it has one) to ``root`` and move
    the file in ``entry[file_key]`` (a full path) under it, by name."""
    if 'data_root' in entry:
        entry['data_root'] = root
    if entry.get(file_key):
        entry[file_key] = osp.join(root, osp.basename(entry[file_key]))


def _redirect_db_sampler(dataset: dict, root: str) -> None:
    """``ObjectSample``'s ground-truth database moves with the data."""
    for transform in dataset.get('pipeline') or []:
        sampler = transform.get('db_sampler') if isinstance(
            transform, dict) else None
        if isinstance(sampler, dict):
            _move_under(sampler, root, 'info_path')


def redirect_data_root(cfg: Config, data_root: str) -> Config:
    """Set ``data_root`` of every dataset and evaluator of ``cfg``.

    Wrapped datasets (``CBGSDataset``, ``ConcatDataset`` children) and the
    ground-truth database of ``ObjectSample`` (its ``data_root`` and
    ``info_path``) move too.

    Evaluators hold the info file as a full path: their ``ann_file`` keeps
    its file name and moves under ``data_root``. A config's top-level
    ``data_root`` variable is already substituted when the file is read,
    so overriding it alone changes nothing; this does the substitution.

    Args:
        cfg (Config): Config to change in place.
        data_root (str): The new root.

    Returns:
        Config: ``cfg``.
    """
    root = osp.join(str(data_root), '')
    cfg.data_root = root
    for section in SECTIONS:
        loader = cfg.get(section)
        if not loader:
            continue
        for dataset in unwrap_datasets(loader.get('dataset')):
            if 'data_root' in dataset:
                dataset['data_root'] = root
            _redirect_db_sampler(dataset, root)
    for section in EVALUATORS:
        evaluators = cfg.get(section)
        if not evaluators:
            continue
        items: Union[list, tuple] = evaluators if isinstance(
            evaluators, (list, tuple)) else [evaluators]
        for evaluator in items:
            if isinstance(evaluator, (dict, ConfigDict)):
                _move_under(evaluator, root, 'ann_file')
    return cfg
