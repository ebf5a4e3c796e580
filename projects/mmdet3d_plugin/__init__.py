"""MMDetection3D plugin: pickle-safe nuScenes data, DDP unused-parameter
reports, training presets and launch tools.

Load it from a config with::

    custom_imports = dict(
        imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)

Importing registers the plugin's classes into mmdet3d's registries and applies
the stack fixes listed in :mod:`projects.mmdet3d_plugin.compat` (its
``inventory``); it does nothing else.
"""
from . import compat  # noqa: F401  the stack fixes (compat/inventory.py)
from . import datasets  # noqa: F401  registers SafeNuScenesDataset
from . import engine  # noqa: F401  registers the runner, hooks, optim wrapper
from . import evaluation  # noqa: F401  registers SafeNuScenesMetric
from .config import load_config  # noqa: F401
