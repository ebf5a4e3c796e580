"""The pickle-safe nuScenes dataset, its shared infos and input checks (the
pickle audit is in ``pickling``, the devkit config fix in ``compat``), and
the sampler and wrapper that make a resumed run load the same samples
(``resumable``)."""
from . import transforms  # noqa: F401  registers the Fast* transforms
from .builder import SPLITS, build_split_dataset
from .forkserver import setup_forkserver_preload
from .resumable import ResumableSampler, SeededDataset
from .safe_nuscenes_dataset import SafeNuScenesDataset

__all__ = [
    'SPLITS', 'ResumableSampler', 'SafeNuScenesDataset', 'SeededDataset',
    'build_split_dataset', 'setup_forkserver_preload'
]
