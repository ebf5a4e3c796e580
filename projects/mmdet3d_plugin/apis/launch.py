"""Earlier import path of the train / test entry points, now in
:mod:`projects.mmdet3d_plugin.cli` (``parsers``, ``prepare``, ``run``,
``runner``) and :mod:`projects.mmdet3d_plugin.config.plugin_dir`; each
name warns (``DeprecationWarning``). ``load`` is
:func:`~projects.mmdet3d_plugin.cli.prepare_run` now."""
from .. import cli
from ..cli import parsers, run, runner
from ..config import plugin_dir
from ..utils.moved import moved_names, public_names

__getattr__, __dir__ = moved_names(__name__, {
    **public_names(plugin_dir), **public_names(parsers),
    **public_names(runner), **public_names(run),
    'record_errors': cli, 'run_tool': cli,
})
del cli, parsers, plugin_dir, run, runner
