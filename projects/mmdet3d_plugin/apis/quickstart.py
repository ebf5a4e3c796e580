"""Earlier import path of :mod:`projects.mmdet3d_plugin.demo.quickstart`;
each name warns (``DeprecationWarning``)."""
from ..demo import quickstart
from ..utils.moved import moved_names, public_names

__getattr__, __dir__ = moved_names(__name__, public_names(quickstart))
del quickstart
