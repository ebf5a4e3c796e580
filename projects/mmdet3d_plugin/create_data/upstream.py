"""mmdet3d's and the nuScenes devkit's own definitions that the info
records need, read from the installed packages without importing them:
``mmdet3d`` loads torch and mmdet (~5 CPU-s a process), ``nuscenes``
(any of its modules: its ``__init__`` imports ``NuScenes``) loads cv2,
matplotlib and sklearn (~1.5 CPU-s); together most of ``create_data``'s
start-up, for a few small functions.

:func:`upstream_definitions` takes named top-level functions, classes and
constants (or named methods of one class) out of a package's source file
(``ast``) and runs just those, with the module-level names they use given
by the caller; the code is the package's own, unchanged. What
:mod:`.infos` and :mod:`.prepare` use:

- :func:`converter_helpers`: the record templates of mmdet3d's
  ``update_infos_to_v2.py``, ``convert_utils``' 2D-box helpers and names,
  ``datasets.utils.convert_quaternion_to_matrix``, the devkit's
  ``view_points`` and its scene splits;
- :func:`devkit_tables`: the devkit's ``NuScenes`` tables, reverse index,
  ``get``, ``get_box`` (its ``Box``), ``box_velocity`` and
  ``get_sample_data_path`` (its own methods), without the map masks,
  colour maps and explorer the converter does not use.
"""
import __future__
import ast
import copy
import importlib.util
import json
import math
import os.path as osp
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from pyquaternion import Quaternion
from shapely.geometry import MultiPoint, box
from shapely.geometry.polygon import Polygon

_HELPERS: Dict[str, SimpleNamespace] = {}


def package_dir(package: str) -> Path:
    """An installed package's folder (found, not imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f'upstream_definitions: expected the package {package!r} '
            'installed (mmdet3d 1.x, nuscenes-devkit); got none; install '
            'the requirements.')
    return Path(list(spec.submodule_search_locations)[0])


def upstream_definitions(relpath: str,
                         names: Sequence[str],
                         package: str = 'mmdet3d',
                         class_name: Optional[str] = None,
                         undecorated: bool = False,
                         **module_globals) -> Dict[str, object]:
    """The top-level definitions ``names`` (functions, classes,
    assignments) of ``<package>/<relpath>``, or with ``class_name`` the
    methods ``names`` of that class, executed in their file's order in a
    namespace holding ``module_globals`` (the module-level names they
    use); annotations are not evaluated; ``undecorated``: the functions
    without their decorators.

    Raises:
        LookupError: A name is not defined there.
    """
    path = package_dir(package) / relpath
    tree = ast.parse(path.read_text(), str(path))
    nodes = tree.body
    if class_name is not None:
        nodes = [
            node for node in nodes
            if isinstance(node, ast.ClassDef) and node.name == class_name
        ]
        nodes = nodes[0].body if nodes else []
    wanted, found = set(names), set()
    body = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined = {node.name}
        elif isinstance(node, ast.Assign):
            defined = {t.id for t in node.targets if isinstance(t, ast.Name)}
        else:
            continue
        if defined & wanted:
            if undecorated and isinstance(node, ast.FunctionDef):
                node.decorator_list = []
            body.append(node)
            found |= defined
    missing = wanted - found
    if missing:
        raise LookupError(
            f'upstream_definitions: expected {sorted(missing)} in '
            f'{class_name or "the top level"} of {path}; got no such '
            'definition (another version? this reads mmdet3d 1.4.0 and '
            'nuscenes-devkit 1.1).')
    namespace = dict(module_globals, __name__=f'{package}:{relpath}')
    code = compile(
        ast.Module(body=body, type_ignores=[]),
        str(path),
        'exec',
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True)
    exec(code, namespace)
    return {name: namespace[name] for name in names}


def converter_helpers() -> SimpleNamespace:
    """The mmdet3d definitions :mod:`.infos` calls (once per process)."""
    if 'nuscenes' in _HELPERS:
        return _HELPERS['nuscenes']
    helpers = {}
    helpers.update(
        upstream_definitions(
            '.mim/tools/dataset_converters/update_infos_to_v2.py',
            ('get_empty_instance', 'get_empty_lidar_points',
             'get_empty_radar_points', 'get_empty_img_info',
             'get_single_image_sweep', 'get_single_lidar_sweep',
             'get_empty_standard_data_info', 'clear_instance_unused_keys',
             'clear_data_info_unused_keys'),
            copy=copy))
    helpers.update(
        upstream_definitions(
            'datasets/convert_utils.py',
            ('nus_categories', 'nus_attributes', 'NuScenesNameMapping',
             'post_process_coords', 'generate_record'),
            np=np,
            warnings=warnings,
            List=List,
            Optional=Optional,
            Tuple=Tuple,
            Union=Union,
            MultiPoint=MultiPoint,
            box=box,
            Polygon=Polygon))
    helpers.update(
        upstream_definitions(
            'datasets/utils.py', ('convert_quaternion_to_matrix', ),
            np=np,
            Quaternion=Quaternion))
    helpers.update(
        upstream_definitions(
            'utils/geometry_utils.py', ('view_points', ),
            package='nuscenes',
            np=np))
    helpers.update(
        upstream_definitions(
            'utils/splits.py', ('train_detect', 'train_track', 'train', 'val',
                                'test', 'mini_train', 'mini_val'),
            package='nuscenes'))
    _HELPERS['nuscenes'] = SimpleNamespace(**helpers)
    return _HELPERS['nuscenes']


#: The devkit's tables, in ``NuScenes.__init__``'s order.
TABLE_NAMES = ('category', 'attribute', 'visibility', 'instance', 'sensor',
               'calibrated_sensor', 'ego_pose', 'log', 'scene', 'sample',
               'sample_data', 'sample_annotation', 'map')


def devkit_tables(version: str, dataroot: str):
    """The devkit's ``NuScenes(version, dataroot)`` as the converter uses
    it: its tables (and ``lidarseg`` / ``panoptic`` where present) with
    its reverse index, and its own ``get``, ``getind``, ``get_box``,
    ``box_velocity`` and ``get_sample_data_path``."""
    if 'tables' not in _HELPERS:
        box = upstream_definitions(
            'utils/data_classes.py', ('Box', ),
            package='nuscenes',
            np=np,
            copy=copy,
            Quaternion=Quaternion,
            view_points=converter_helpers().view_points)['Box']
        methods = upstream_definitions(
            'nuscenes.py',
            ('table_root', '__load_table__', '__make_reverse_index__', 'get',
             'getind', 'get_sample_data_path', 'get_box', 'box_velocity'),
            package='nuscenes',
            class_name='NuScenes',
            np=np,
            json=json,
            osp=osp,
            time=time,
            math=math,
            Box=box,
            Quaternion=Quaternion)
        _HELPERS['tables'] = type('NuScenesTables', (), dict(
            methods, __init__=_tables_init))
    return _HELPERS['tables'](version, dataroot)


def _tables_init(self, version: str, dataroot: str) -> None:
    """``NuScenes.__init__``'s tables (not its map masks, colour map or
    explorer)."""
    self.version = version
    self.dataroot = dataroot
    self.verbose = False
    self.table_names = list(TABLE_NAMES)
    if not osp.exists(self.table_root):
        raise FileNotFoundError(
            f'create_data: expected the table folder {self.table_root}; '
            'got none; point --root-path at a nuScenes root.')
    for name in TABLE_NAMES:
        setattr(self, name, self.__load_table__(name))
    for task in ('lidarseg', 'panoptic'):
        if osp.exists(osp.join(self.table_root, task + '.json')):
            setattr(self, task, self.__load_table__(task))
            self.table_names.append(task)
    self.__make_reverse_index__(False)
