"""Earlier import paths of what the tools call, kept working outside the
layers of ``.importlinter``: ``apis`` moved to ``cli`` (parsers, the error
printer, preparing a run, train / test, find-unused), ``demo``
(quickstart, BEV figure) and ``config.plugin_dir``. Each name warns
(``DeprecationWarning``) naming its real module. ``apis.launch`` is kept
too; the modules that moved whole (``errors``, ``find_unused``,
``quickstart``, ``bev_figure``) are ``cli.*`` / ``demo.*`` now."""
from .. import cli, demo
from ..utils.moved import moved_names

_MOVED = {
    'build_runner': cli, 'find_unused_parameters': cli, 'run_tool': cli,
    'test': cli, 'train': cli, 'run_quickstart': demo,
}
__all__ = sorted(_MOVED)
__getattr__, __dir__ = moved_names(__name__, _MOVED)
del cli, demo
