"""MMDetection3D plugin: pickle-safe nuScenes data, DDP unused-parameter
reports, exact resume, failure reports, training presets and launch tools.

Load it from a config with::

    custom_imports = dict(
        imports=['projects.mmdet3d_plugin'], allow_failed_imports=False)

Importing the package is cheap: it loads neither torch, mmcv nor mmdet3d.
It names :mod:`.registration` among the locations of mmdet3d's registries
(the way mmdet3d registers its own classes), so the plugin's classes are
registered, and the stack fixes of :mod:`.compat` applied, when a config
first builds something from one of those registries
(:mod:`.lazy_registration`). Code that wants them at once imports
:mod:`projects.mmdet3d_plugin.registration`.
"""
from wrapt import when_imported

from .lazy_registration import add_plugin_locations

__all__ = ['load_config']

when_imported('mmdet3d.registry')(add_plugin_locations)


def __getattr__(name: str):
    # PEP 562: ``projects.mmdet3d_plugin.load_config`` without loading
    # mmengine's config code on every import of the package.
    if name == 'load_config':
        from .config.loading import load_config
        return load_config
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
