"""The train dataset of a config, built as tools/train.py builds it."""
from typing import Any, Dict, Optional

from ..cli.prepare import prepare_run
from ..datasets.builder import build_split_dataset


def build_train_dataset(config: str,
                        data_root: Optional[str] = None,
                        cfg_options: Optional[Dict] = None) -> tuple:
    """Prepare ``config`` as tools/train.py does (``cli.prepare_run``:
    presets, ``--cfg-options``, ``--data-root``, the plugin) and build
    ``train_dataloader.dataset``, infos loaded (``full_init``).

    Args:
        config (str): Config file.
        data_root (str, optional): Point every dataset and the GT database
            at this root. Defaults to None.
        cfg_options (dict, optional): ``--cfg-options``. Defaults to None.

    Returns:
        tuple: ``(cfg, dataset)``.
    """
    cfg = prepare_run(
        config, 'train', cfg_options=cfg_options, data_root=data_root,
        stop=False)
    dataset: Any = build_split_dataset(cfg, 'train')
    if hasattr(dataset, 'full_init'):
        dataset.full_init()
    return cfg, dataset
