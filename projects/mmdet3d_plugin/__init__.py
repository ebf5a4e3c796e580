"""MMDetection3D plugin: pickle-safe nuScenes data, DDP unused-parameter
reports, training presets and launch tools.

Load it from a config with::

    custom_imports = dict(
        imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)

Importing registers the plugin's classes into mmdet3d's registries and applies
the stack fixes listed in :mod:`projects.mmdet3d_plugin.compat` (its
``inventory``); it does nothing else.
"""
from . import (  # noqa: F401  registers SafeNuScenesMetric
    compat, datasets, engine, evaluation)
from .config import load_config  # noqa: F401
