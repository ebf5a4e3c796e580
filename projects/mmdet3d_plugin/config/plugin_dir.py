"""A config's legacy ``plugin = True`` / ``plugin_dir``: where the folder
is, whether its module name collides with an imported module (this
package's, most often), and importing it.

Configs written for UniAD / BEVFormer name their plugin by a folder
relative to the repository they run from; :func:`import_plugins` imports
it as the module its path names, and :func:`plugin_dir_collision` finds,
without importing anything, the collision that would shadow one of two
packages of the same module name.
"""
import importlib
import os
import os.path as osp
import re
import sys
from typing import List, Optional, Tuple

from mmengine.config import Config
from mmengine.logging import print_log

from ..constants import PLUGIN_MODULE as PLUGIN


class PluginDirCollisionError(ImportError):
    """A config's ``plugin_dir`` names a module that is already imported
    from another folder (this package, most often).

    Args:
        detail (str): What was expected and what was found, one line.
        fix (str): What to do, one sentence.
    """

    def __init__(self, detail: str, fix: str):
        super().__init__(f'config: {detail}; {fix}')
        self.detail = detail
        self.fix = fix


def _import_roots() -> List[str]:
    """The working directory, then ``sys.path``, as absolute folders."""
    roots = []
    for entry in [os.getcwd()] + sys.path:
        root = osp.abspath(entry or os.getcwd())
        if osp.isdir(root) and root not in roots:
            roots.append(root)
    return roots


def locate_plugin_dir(plugin_dir: str) -> Tuple[str, str, Optional[str]]:
    """Where a config's legacy ``plugin_dir`` is, and its module name.

    UniAD / BEVFormer run from their repository's root, and ``plugin_dir``
    is relative to it: the folder is looked up under the working directory
    first, then under the entries of ``sys.path``.

    Args:
        plugin_dir (str): The config's ``plugin_dir``, e.g.
            ``'projects/mmdet3d_plugin/'``.

    Returns:
        tuple[str, str, str | None]: The module name (the path with dots),
        the folder the module is imported from (the working directory, or
        the ``sys.path`` entry where it was found), and the real path of
        the plugin folder, None when no such folder exists.

    Raises:
        ValueError: If ``plugin_dir`` does not map to a module name.
    """
    path = osp.normpath(plugin_dir)
    roots = _import_roots()
    root = roots[0]
    if osp.isabs(path):
        inside = [r for r in roots
                  if osp.commonpath([r, path]) == r and r != path]
        if inside:
            root = inside[0]
        path = osp.relpath(path, root)
    parts = path.split(os.sep)
    if not all(part.isidentifier() for part in parts):
        raise ValueError(
            f'config: plugin_dir={plugin_dir!r} must be a folder inside the '
            f'working directory ({root}) whose path, with dots, is a module '
            f'name, got {".".join(parts)!r}; run from the repository that '
            "holds the plugin and give the path relative to it, e.g. "
            "plugin_dir='projects/mmdet3d_plugin/'")
    for candidate in [root] + roots:
        if osp.isdir(osp.join(candidate, path)):
            return '.'.join(parts), candidate, osp.realpath(
                osp.join(candidate, path))
    return '.'.join(parts), root, None


def _module_folders(module) -> List[str]:
    """The folders a module's submodules are imported from (or its file)."""
    folders = list(getattr(module, '__path__', None) or [])
    if not folders and getattr(module, '__file__', None):
        folders = [module.__file__]
    return [osp.realpath(f) for f in folders]


def _module_name_suggestion(root: str) -> str:
    name = re.sub(r'\W+', '_', osp.basename(root).lower()).strip('_')
    if not name or not name.isidentifier() or name[0].isdigit():
        name = 'my'
    return f'{name}_plugin'


def _collision(plugin_dir: str, module: str, root: str,
               folder: str) -> Optional[PluginDirCollisionError]:
    """The longest part of ``module`` already imported from elsewhere."""
    ours = _module_folders(sys.modules[PLUGIN])[0]
    parts = module.split('.')
    for i in range(len(parts), 0, -1):
        name = '.'.join(parts[:i])
        imported = sys.modules.get(name)
        expected = osp.realpath(osp.join(root, *parts[:i]))
        if imported is None:
            continue
        got = _module_folders(imported)
        if expected in got:
            continue
        got_text = ', '.join(got) or repr(imported)
        ours_or_parent = got in ([ours], [osp.dirname(ours)])
        if name == PLUGIN and got == [ours]:
            what = (f'a different folder with the same module name as this '
                    f'package ({ours}): one process imports one module '
                    f'{PLUGIN}, and the tools run on this package, so your '
                    'plugin would not be imported')
        elif name == module:
            what = (f'a different folder with the same module name as the '
                    f'imported module {name} ({got_text})')
        else:
            whose = ', the parent of this package' if ours_or_parent else ''
            what = (f'but its parent package {name} is imported from '
                    f'{got_text}{whose}, not from {expected}, so {module} '
                    'cannot be imported from there')
        new = _module_name_suggestion(root)
        fix = (f'give your plugin a top-level module name of its own: move '
               f'{folder} to {osp.join(root, new)}, set plugin_dir='
               f"'{new}/' and change its imports of {module} to {new}")
        if ours_or_parent:
            fix += ("; or run it with your repository's own tools, without "
                    'this package')
        return PluginDirCollisionError(
            f'plugin_dir={plugin_dir!r} is {folder}, {what}', fix)
    return None


def plugin_dir_collision(cfg: Config) -> Optional[PluginDirCollisionError]:
    """The collision of the config's ``plugin_dir`` with imported modules.

    ``plugin_dir = 'projects/mmdet3d_plugin/'`` of a UniAD / BEVFormer
    repository names the module ``projects.mmdet3d_plugin``, the module
    name of this package: Python imports one of the two, and the other is
    shadowed. The module name and each of its parents that is already
    imported (``projects`` is this package's parent) must come from the
    ``plugin_dir`` folder; when one comes from another folder, the error
    names both folders and the fix. Nothing is imported here.

    Args:
        cfg (Config): A loaded config.

    Returns:
        PluginDirCollisionError | None: The error to raise or report; None
        when the config has no legacy plugin, its folder does not exist,
        or nothing collides (``plugin_dir`` is this package's own folder).
    """
    plugin_dir = cfg.get('plugin_dir') if cfg.get('plugin', False) else None
    if not plugin_dir:
        return None
    module, root, folder = locate_plugin_dir(plugin_dir)
    if folder is None:
        return None
    return _collision(plugin_dir, module, root, folder)


def import_plugins(cfg: Config) -> None:
    """Import the legacy ``plugin_dir`` of a config (this plugin is
    imported already: Python imports it before this module).

    Configs written for UniAD / BEVFormer say ``plugin = True`` and
    ``plugin_dir = 'projects/mmdet3d_plugin/'``; the folder is looked up
    under the working directory (then under ``sys.path``) and imported as
    the module its path names, the working directory being added to the
    end of ``sys.path`` when needed. When that module name (or a parent,
    such as ``projects``) is already imported from another folder, as a
    UniAD repository's ``projects.mmdet3d_plugin`` collides with this
    package, nothing is imported and :class:`PluginDirCollisionError`
    names both folders (see :func:`plugin_dir_collision`). A
    ``plugin_dir`` that is this package's own folder is this package.
    Configs that import the plugin through ``custom_imports`` were
    already handled by ``Config.fromfile``.

    Raises:
        ValueError: If ``plugin = True`` comes without a usable
            ``plugin_dir``.
        PluginDirCollisionError: If the module name of ``plugin_dir`` is
            already imported from another folder.
        ImportError: If the folder is missing or fails to import.
    """
    if not cfg.get('plugin', False):
        return
    plugin_dir = cfg.get('plugin_dir')
    if not plugin_dir:
        raise ValueError(
            'config: `plugin = True` needs `plugin_dir`, e.g. '
            "plugin_dir = 'projects/mmdet3d_plugin/'")
    module, root, folder = locate_plugin_dir(plugin_dir)
    if folder is None:
        raise ImportError(
            f'config: plugin_dir={plugin_dir!r} is not a folder under the '
            f'working directory ({root}) nor under sys.path; run from the '
            'repository that holds it, or put that repository on PYTHONPATH')
    collision = _collision(plugin_dir, module, root, folder)
    if collision is not None:
        raise collision
    if module in sys.modules:
        what = ('this package' if module == PLUGIN else 'already imported')
        print_log(f'plugin_dir {plugin_dir!r} is {folder} ({what})',
                  logger='current')
        return
    if root not in (osp.abspath(p or os.getcwd()) for p in sys.path):
        sys.path.append(root)
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f'config: cannot import plugin_dir={plugin_dir!r} as module '
            f'{module!r} from {root} ({e}); fix the import error, or run from '
            'the repository that holds it') from e
    # A module of the same name earlier on sys.path would have won.
    collision = _collision(plugin_dir, module, root, folder)
    if collision is not None:
        raise collision
    print_log(f'imported plugin_dir {plugin_dir!r} from {folder}',
              logger='current')
