"""Point a config's datasets and evaluators at another copy of the data."""
import os.path as osp
from typing import Union

from mmengine.config import Config, ConfigDict

SECTIONS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
EVALUATORS = ('val_evaluator', 'test_evaluator')


def _datasets(dataset: dict):
    """Yield a dataset config and those it wraps (CBGSDataset, ...)."""
    while isinstance(dataset, dict):
        yield dataset
        dataset = dataset.get('dataset')


def redirect_data_root(cfg: Config, data_root: str) -> Config:
    """Set ``data_root`` of every dataset and evaluator of ``cfg``.

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
        for dataset in _datasets(loader.get('dataset')):
            if 'data_root' in dataset:
                dataset['data_root'] = root
    for section in EVALUATORS:
        evaluators = cfg.get(section)
        if not evaluators:
            continue
        items: Union[list, tuple] = evaluators if isinstance(
            evaluators, (list, tuple)) else [evaluators]
        for evaluator in items:
            if not isinstance(evaluator, (dict, ConfigDict)):
                continue
            if 'data_root' in evaluator:
                evaluator['data_root'] = root
            if evaluator.get('ann_file'):
                evaluator['ann_file'] = osp.join(
                    root, osp.basename(evaluator['ann_file']))
    return cfg
