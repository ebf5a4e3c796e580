"""Earlier import path of :mod:`projects.mmdet3d_plugin.cli.find_unused`;
each name warns (``DeprecationWarning``)."""
from ..cli import find_unused
from ..utils.moved import moved_names, public_names

__getattr__, __dir__ = moved_names(__name__, public_names(find_unused))
del find_unused
