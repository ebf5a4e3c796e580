"""The one place a config's dataset of a split is built (the pickle audit,
``tools/check_pickle.py`` and the doctor use it)."""
import copy

from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS

SPLITS = ('train', 'val', 'test')


def build_split_dataset(cfg, split: str = 'train'):
    """Build the dataset of ``<split>_dataloader`` from a loaded config.

    Args:
        cfg (mmengine.Config): The config, plugin imports already applied.
        split (str): 'train', 'val' or 'test'. Defaults to 'train'.

    Returns:
        torch.utils.data.Dataset: The built dataset.
    """
    if split not in SPLITS:
        raise ValueError(
            f'build_split_dataset: split must be one of {SPLITS}, got '
            f'{split!r}')
    loader_cfg = cfg.get(f'{split}_dataloader')
    if not loader_cfg or 'dataset' not in loader_cfg:
        raise ValueError(
            f'build_split_dataset: the config has no '
            f'{split}_dataloader.dataset; pick a split it defines (--split '
            'for tools/check_pickle.py)')
    init_default_scope(cfg.get('default_scope', 'mmdet3d'))
    dataset_cfg = loader_cfg['dataset']
    if isinstance(dataset_cfg, dict):
        return DATASETS.build(copy.deepcopy(dataset_cfg))
    return dataset_cfg  # already an object
