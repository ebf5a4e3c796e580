"""The info files a data check reads: a dataset's mmdet3d 1.x info file
and ``ObjectSample``'s GT-database info file, each reduced to the tokens
and paths that say which files the pipelines open (:mod:`.data_files`
joins them to the config's folders, kind by kind).

Reading the info files is most of the time of a data check
(v1.0-trainval's are about 1.2 GB of pickled dicts): each is read once,
straight from the file (:func:`load_info_file`: twice as fast as
``mmengine.load``), with Python's cyclic garbage collector paused
(:func:`gc_paused`: three times as fast), and only the tokens and paths
are kept. Nothing of torch, mmcv or mmdet3d is imported.

Public API::

    read_samples(ann_file: str) -> List[InfoSample]
    read_db_infos(info_path: str, where: str) -> Dict[str, List[DbObject]]
    load_info_file(path: str) -> Any
    gc_paused() -> ContextManager[None]
    create_data_cmd(path: str) -> str
"""
import contextlib
import gc
import os.path as osp
import pickle
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

import mmengine

from ..constants import CREATE_DATA_CMD


class InfoSample(NamedTuple):
    """What is kept of one info: its token, index and raw paths."""
    token: str
    sample_idx: Optional[int]
    lidar: Optional[str]
    sweeps: Tuple[str, ...]
    images: Tuple[Tuple[str, str], ...]


class DbObject(NamedTuple):
    """What is kept of one GT-database object."""
    path: str
    image_idx: Optional[int]
    difficulty: Optional[int]
    num_points: int


def create_data_cmd(path: str) -> str:
    """The command that (re)creates the info file ``path`` and the GT
    database beside it, for error messages."""
    return CREATE_DATA_CMD.format(root=osp.dirname(path) or '.')


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (for the whole
    process), back on after if it was on. Loading an info file allocates
    millions of dicts and lists, none in a cycle, and every collection on
    the way walks all of them: with it on, loading v1.0-trainval's infos
    takes about three times as long."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_info_file(path: str):
    """``mmengine.load(path)``, a pickle read from the open file.

    mmengine 0.10.7 unpickles from a ``BytesIO`` of the file's bytes, which
    has no ``peek()``: the unpickler then reads mmdet3d's protocol-2
    pickles (no frames) a few bytes per Python call, and takes twice as
    long as from the file.
    """
    if path.endswith(('.pkl', '.pickle')):
        with open(path, 'rb') as f:
            return pickle.load(f)
    return mmengine.load(path)


def read_samples(ann_file: str) -> List[InfoSample]:
    """The token, ``sample_idx`` and raw paths of each info of a 1.x info
    file.

    Raises:
        FileNotFoundError: If ``ann_file`` does not exist.
        ValueError: If it is no mmdet3d 1.x info file.
    """
    if not osp.isfile(ann_file):
        raise FileNotFoundError(
            f'data_check: info file {ann_file!r} does not exist; create the '
            f'info files with `{create_data_cmd(ann_file)}`, or point the '
            'config at the data with --data-root DIR.')
    with gc_paused():
        data = load_info_file(ann_file)
        if not (isinstance(data, dict)
                and isinstance(data.get('data_list'), list)):
            found = (f'a dict with keys {sorted(map(str, data))[:6]}'
                     if isinstance(data, dict) else
                     f'a {type(data).__name__}')
            raise ValueError(
                f'data_check: info file {ann_file!r} is {found}, not an '
                'mmdet3d 1.x info file (metainfo + data_list); recreate it '
                f'with `{create_data_cmd(ann_file)}` (about 2 minutes for '
                "v1.0-trainval on 2 cores; mmdet3d's tools/dataset_converters"
                '/update_infos_to_v2.py keeps the boxes of 0.x files as they '
                'are: (w, l, h, θ) before mmdet3d 1.0.0rc0).')
        samples = []
        for info in data['data_list']:
            idx = info.get('sample_idx')
            token = info.get('token') or (f'sample_idx {idx}'
                                          if idx is not None else '')
            lidar = (info.get('lidar_points') or {}).get('lidar_path')
            sweeps = tuple(sweep['lidar_points']['lidar_path']
                           for sweep in info.get('lidar_sweeps') or ())
            images = tuple(
                (camera, image['img_path'])
                for camera, image in (info.get('images') or {}).items()
                if isinstance(image, dict) and 'img_path' in image)
            samples.append(InfoSample(token, idx, lidar, sweeps, images))
        del data
    return samples


def read_db_infos(info_path: str, where: str) -> Dict[str, List[DbObject]]:
    """The objects of ``db_sampler.info_path``, by class.

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If it does not hold a dict of lists of objects.
    """
    if not osp.isfile(info_path):
        raise FileNotFoundError(
            f'data_check: {where}.db_sampler.info_path {info_path!r} does '
            'not exist; build the GT database with '
            f'`{create_data_cmd(info_path)}`, or point the config at the '
            'data with --data-root DIR.')
    with gc_paused():
        db_infos = load_info_file(info_path)
        try:
            return {
                name: [
                    DbObject(obj['path'], obj.get('image_idx'),
                             obj.get('difficulty'),
                             obj.get('num_points_in_gt', 0))
                    for obj in objects
                ]
                for name, objects in db_infos.items()
            }
        except (AttributeError, KeyError, TypeError) as exc:
            raise ValueError(
                f'data_check: {where}.db_sampler.info_path {info_path!r} is '
                'not a GT database info file (a dict of class name -> list '
                f"of objects with a 'path': {type(exc).__name__} {exc}); "
                f'rebuild it with `{create_data_cmd(info_path)}`.') from None
