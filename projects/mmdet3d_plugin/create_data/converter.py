"""Run mmdet3d's own nuScenes converter on any dataset root (the reference
the parallel ``prepare`` is checked against: ``--reference``).

mmdet3d 1.4.0 ships its converter scripts in the wheel
(``mmdet3d/.mim/tools/dataset_converters``) but not as an importable package,
and its info updater (``update_infos_to_v2.update_nuscenes_infos``) opens
``NuScenes(dataroot='./data/nuscenes')`` whatever root it is given.
:func:`create_nuscenes_infos` therefore loads the three converter modules
from the wheel by path and runs them, in the same order as
``tools/create_data.py nuscenes``, inside a temporary working directory whose
``data/nuscenes`` holds links to the dataset root. The products are built
there and renamed into the output directory only when complete.

The hard-coded path can go once mmdet3d passes the root through
(upstream ``update_infos_to_v2.py``, ``dataroot='./data/nuscenes'``).

The converter works on 3x3 matrices and quaternions, box by box (tens of
thousands of small ``numpy.linalg.inv`` calls per thousand samples); it
runs with one BLAS thread (``threadpoolctl``), with which each such call
took 7 us instead of 49 us on a 2-core machine.
"""
import contextlib
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, List, Optional, Union

import mmengine
from threadpoolctl import threadpool_limits

from .shards import replace_path

_CONVERTERS = ('nuscenes_converter', 'update_infos_to_v2',
               'create_gt_database')
#: The info files of each version, as mmdet3d's converter names them.
VERSION_SPLITS = {
    'v1.0-mini': ('train', 'val'),
    'v1.0-trainval': ('train', 'val'),
    'v1.0-test': ('test', ),
}


def mmdet3d_converter_dir() -> Path:
    """The folder of the dataset converters shipped in the mmdet3d wheel."""
    import mmdet3d
    return Path(mmdet3d.__file__).parent / '.mim' / 'tools' / \
        'dataset_converters'


def load_mmdet3d_converter(name: str) -> ModuleType:
    """Import one of mmdet3d's dataset converter scripts by file path.

    Args:
        name (str): Module name, e.g. ``'nuscenes_converter'``.

    Returns:
        ModuleType: The module, cached in ``sys.modules`` as
        ``mmdet3d_dataset_converters.<name>``.
    """
    if name not in _CONVERTERS:
        raise ValueError(f'load_mmdet3d_converter: expected one of '
                         f'{_CONVERTERS}; got {name!r}.')
    mod_name = f'mmdet3d_dataset_converters.{name}'
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    path = mmdet3d_converter_dir() / f'{name}.py'
    if not path.is_file():
        raise FileNotFoundError(
            f'load_mmdet3d_converter: {path} not found; this needs the '
            'mmdet3d 1.x wheel, which ships its tools under mmdet3d/.mim.')
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


def info_paths(out_dir: Union[str, Path],
               version: str = 'v1.0-mini',
               info_prefix: str = 'nuscenes',
               gt_database: bool = False) -> List[Path]:
    """The files :func:`create_nuscenes_infos` writes into ``out_dir``.

    ``v1.0-test`` has one info file (``<prefix>_infos_test.pkl``) and, as
    in mmdet3d, no ground-truth database.
    """
    if version not in VERSION_SPLITS:
        raise ValueError(f'create_nuscenes_infos: version must be one of '
                         f'{tuple(VERSION_SPLITS)}; got {version!r}.')
    out = Path(out_dir)
    paths = [
        out / f'{info_prefix}_infos_{split}.pkl'
        for split in VERSION_SPLITS[version]
    ]
    if gt_database and 'train' in VERSION_SPLITS[version]:
        paths += [
            out / f'{info_prefix}_dbinfos_train.pkl',
            out / f'{info_prefix}_gt_database'
        ]
    return paths


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _compile_points_in_rbbox() -> None:
    """Compile the numba loop of ``box_np_ops.points_in_rbbox`` for the
    dtypes ``create_groundtruth_database`` gives it (so that the timed GT
    phase holds no compiling, as ours holds none)."""
    import numpy as np
    from mmdet3d.structures.ops import box_np_ops
    box_np_ops.points_in_rbbox(
        np.zeros((2, 5), dtype=np.float32), np.ones((1, 9),
                                                    dtype=np.float32))


def checked_root(root_path, version: str, max_sweeps) -> Path:
    """The dataset root, resolved, once ``max_sweeps`` is an int >= 0 and
    the root holds the ``version`` table folder (both tools' check)."""
    if not isinstance(max_sweeps, int) or max_sweeps < 0:
        raise ValueError('create_nuscenes_infos: max_sweeps must be an int '
                         f'>= 0; got {max_sweeps!r}.')
    root = Path(root_path).resolve()
    if not (root / version).is_dir():
        raise FileNotFoundError(
            f'create_nuscenes_infos: no table folder {root / version}; '
            'point root_path at a nuScenes root (or create one with '
            'tools/create_synthetic_nuscenes.py).')
    return root


def run_mmdet3d_converter(root_path: Union[str, Path],
                          out_dir: Optional[Union[str, Path]] = None,
                          info_prefix: str = 'nuscenes',
                          version: str = 'v1.0-mini',
                          max_sweeps: int = 10,
                          gt_database: bool = False,
                          timings: Optional[Dict[str, float]] = None
                          ) -> List[Path]:
    """Create mmdet3d 1.x info files with mmdet3d's own converter
    (``tools/create_data.py --reference``; the default is the parallel
    :func:`.prepare.create_nuscenes_infos`, whose products equal these).

    Does what mmdet3d's ``tools/create_data.py nuscenes`` does for one
    version (``create_nuscenes_infos``, then ``update_pkl_infos`` for each
    split, then optionally ``create_groundtruth_database``, which
    ``v1.0-test`` skips as mmdet3d does) for a root anywhere, writing
    nothing until each product is complete.

    Args:
        root_path (str | Path): Dataset root holding ``<version>/*.json``,
            ``samples/``, ``sweeps/`` and ``maps/``.
        out_dir (str | Path, optional): Where the info files go. Defaults to
            ``root_path``.
        info_prefix (str): File name prefix. Defaults to ``'nuscenes'``.
        version (str): Dataset version: ``'v1.0-mini'`` (infos of the
            devkit's ``mini_train`` and ``mini_val`` scenes),
            ``'v1.0-trainval'`` (``train`` and ``val``) or ``'v1.0-test'``
            (``test``). Defaults to ``'v1.0-mini'``.
        max_sweeps (int): Sweeps per key frame. Defaults to 10.
        gt_database (bool): Also build the ground-truth database used by
            ``ObjectSample``. Defaults to False.
        timings (dict, optional): Filled with the seconds of the infos
            (``infos_s``: converter and updater) and of the GT database
            (``gt_s``) and their sample counts.

    Returns:
        list[Path]: The files written (see :func:`info_paths`).
    """
    wanted = info_paths(
        out_dir or root_path, version, info_prefix, gt_database=gt_database)
    root = checked_root(root_path, version, max_sweeps)
    out = Path(out_dir or root).resolve()
    out.mkdir(parents=True, exist_ok=True)

    converter = load_mmdet3d_converter('nuscenes_converter')
    updater = load_mmdet3d_converter('update_infos_to_v2')

    with tempfile.TemporaryDirectory(prefix='.create_data-', dir=out) as tmp:
        work = Path(tmp) / 'data' / 'nuscenes'
        work.mkdir(parents=True)
        for entry in root.iterdir():
            if entry.name.startswith('.') or entry.name.endswith('.pkl') or \
                    entry.name.endswith('_gt_database'):
                continue
            (work / entry.name).symlink_to(entry)
        data_root = './data/nuscenes'
        timings = {} if timings is None else timings
        with _working_directory(Path(tmp)), \
                threadpool_limits(limits=1, user_api='blas'):
            start = time.perf_counter()
            converter.create_nuscenes_infos(
                data_root, info_prefix, version=version, max_sweeps=max_sweeps)
            for split in VERSION_SPLITS[version]:
                updater.update_pkl_infos(
                    'nuscenes',
                    out_dir=data_root,
                    pkl_path=f'{data_root}/{info_prefix}_infos_{split}.pkl')
            timings['infos_s'] = time.perf_counter() - start
            timings['infos_samples'] = sum(
                len(mmengine.load(work / f'{info_prefix}_infos_{split}.pkl')
                    ['data_list']) for split in VERSION_SPLITS[version])
            if gt_database and 'train' in VERSION_SPLITS[version]:
                from mmengine.registry import init_default_scope
                init_default_scope('mmdet3d')
                gt_db = load_mmdet3d_converter('create_gt_database')
                _compile_points_in_rbbox()  # start-up, not the phase
                start = time.perf_counter()
                gt_db.create_groundtruth_database(
                    'NuScenesDataset', data_root, info_prefix,
                    f'{info_prefix}_infos_train.pkl')
                timings['gt_s'] = time.perf_counter() - start
                timings['gt_samples'] = len(
                    mmengine.load(work / f'{info_prefix}_infos_train.pkl')
                    ['data_list'])
        for dst in wanted:
            replace_path(work / dst.name, dst)
    return wanted
