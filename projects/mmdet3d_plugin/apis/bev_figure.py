"""Earlier import path of :mod:`projects.mmdet3d_plugin.demo.bev_figure`;
each name warns (``DeprecationWarning``)."""
from ..demo import bev_figure
from ..utils.moved import moved_names, public_names

__getattr__, __dir__ = moved_names(__name__, public_names(bev_figure))
del bev_figure
