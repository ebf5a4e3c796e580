"""Register every class of the plugin into mmdet3d's registries and apply
the stack fixes (:mod:`.compat`), once per process.

Importing this module does it; mmdet3d's registries import it by location
the first time a config builds from them (:mod:`.lazy_registration`).
Importing it loads mmdet3d's datasets, engine and models: the cost a
training process pays anyway, since the plugin's classes subclass them.

Unlike mmdet3d's ``register_all_modules()``, :func:`register_plugin`
initialises no default scope (a config's ``default_scope`` does) and
applies the stack fixes.

Examples:
    >>> from projects.mmdet3d_plugin.registration import register_plugin
    >>> applied = register_plugin()  # the switchable fixes applied
"""
from typing import Set

from . import datasets, engine, evaluation  # noqa: F401  they register
from .compat.fixes import apply_fixes

__all__ = ['register_plugin']


def register_plugin() -> Set[str]:
    """Make sure the plugin's classes are registered and the stack fixes
    applied (once per process; importing this module did both).

    Returns:
        set[str]: The names of the switchable fixes applied in this process
        (``compat.inventory``).
    """
    return apply_fixes()


register_plugin()
