"""MMDetection3D plugin: pickle-safe nuScenes data, DDP unused-parameter
reports, training presets and launch tools.

Load it from a config with::

    custom_imports = dict(
        imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)

Importing registers the plugin's classes into mmdet3d's registries and applies
the stack fixes documented in :mod:`projects.mmdet3d_plugin.compat`; it does
nothing else.
"""
from . import compat  # noqa: F401  checkpoint loading and CPU DDP fixes
from . import datasets  # noqa: F401  registers datasets and transforms
from . import engine  # noqa: F401  registers the runner and AMP wrapper
from . import evaluation  # noqa: F401  registers metrics
from . import hooks  # noqa: F401  registers hooks
from .utils import load_config  # noqa: F401
