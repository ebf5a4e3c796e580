"""Register every class of the plugin into mmdet3d's registries and apply
the stack fixes (:mod:`.compat`), once per process.

Importing this module does it; mmdet3d's registries import it by location
the first time a config builds from them (:mod:`.lazy_registration`).
Importing it loads mmdet3d's datasets, engine and models: the cost a
training process pays anyway, since the plugin's classes subclass them.

Examples:
    >>> from projects.mmdet3d_plugin.registration import \\
    ...     register_all_modules
    >>> register_all_modules()
"""
from typing import Set

from . import datasets, engine, evaluation  # noqa: F401  they register
from .compat.fixes import apply_fixes

__all__ = ['register_all_modules']


def register_all_modules() -> Set[str]:
    """Make sure the plugin is registered and the fixes applied.

    Returns:
        set[str]: The names of the switchable fixes applied in this process
        (``compat.inventory``).
    """
    return apply_fixes()


register_all_modules()
