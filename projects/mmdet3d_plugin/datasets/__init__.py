"""The pickle-safe nuScenes dataset, its shared infos and input checks (the
pickle audit is in ``pickling``, the devkit config fix in ``compat``), the
``Fast*`` transforms, and the dataset wrappers' walk. The sampler and
wrapper that make a resumed run load the same samples are exact resume's
(``engine/resume``)."""
from . import transforms  # noqa: F401  registers the Fast* transforms
from .builder import SPLITS, build_split_dataset
from .forkserver import setup_forkserver_preload
from .safe_nuscenes_dataset import SafeNuScenesDataset

__all__ = [
    'SPLITS', 'SafeNuScenesDataset', 'build_split_dataset',
    'setup_forkserver_preload'
]
