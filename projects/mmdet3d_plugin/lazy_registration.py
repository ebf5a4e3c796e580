"""Register the plugin the way mmdet3d registers itself: by location.

Each of mmdet3d's registries imports its ``locations`` (``mmdet3d.datasets``,
``mmdet3d.engine.hooks``, ...) the first time something is looked up or
built in it (mmengine's ``Registry.import_from_location``). The package's
``__init__`` calls :func:`add_plugin_locations` when ``mmdet3d.registry``
is imported (at once if it already was), adding :data:`REGISTRATION` to
those locations: importing ``projects.mmdet3d_plugin`` costs nothing of the
heavy stack, and a config that builds ``SafeNuScenesDataset`` registers
the plugin before the lookup. A registry that imported its locations
already gets the plugin at once.

Private upstream use (``compat.inventory``): mmengine's
``Registry._locations`` and ``Registry._imported`` (mmengine 0.10.7).
"""
import importlib
from types import ModuleType

from .constants import PLUGIN_MODULE

#: The module that registers every class of the plugin and applies the
#: stack fixes when imported.
REGISTRATION = f'{PLUGIN_MODULE}.registration'

#: The registries of ``mmdet3d.registry`` that hold plugin classes, or that
#: the stack fixes register into.
REGISTRIES = ('DATASETS', 'DATA_SAMPLERS', 'TRANSFORMS', 'HOOKS', 'LOOPS',
              'METRICS', 'MODELS', 'MODEL_WRAPPERS', 'OPTIM_WRAPPERS',
              'RUNNERS')


def add_plugin_locations(registry_module: ModuleType) -> None:
    """Add :data:`REGISTRATION` to the locations of mmdet3d's registries.

    Args:
        registry_module (module): ``mmdet3d.registry``.
    """
    imported_already = False
    for name in REGISTRIES:
        registry = getattr(registry_module, name)
        if REGISTRATION not in registry._locations:
            registry._locations.append(REGISTRATION)
        imported_already |= registry._imported
    if imported_already:
        importlib.import_module(REGISTRATION)
