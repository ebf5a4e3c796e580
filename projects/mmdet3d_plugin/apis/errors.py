"""Earlier import path of :mod:`projects.mmdet3d_plugin.cli.errors`; each
name warns (``DeprecationWarning``)."""
from ..cli import errors
from ..utils.moved import moved_names, public_names

__getattr__, __dir__ = moved_names(__name__, public_names(errors))
del errors
