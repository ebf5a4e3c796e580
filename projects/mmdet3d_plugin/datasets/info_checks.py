"""Input checks for nuScenes datasets: clear errors for bad data and config.

Each check raises ``FileNotFoundError``, ``ValueError`` or ``TypeError``
with a message that starts with the dataset's name, names the file, key or
sample at fault, and says how to fix it. :class:`SafeNuScenesDataset` runs
them; other datasets can call them the same way.
"""
import contextlib
import os.path as osp
import pickle
from typing import Any, Iterator, Optional, Sequence

from ..constants import CREATE_DATA_CMD

#: mmdet3d's converter from 0.x info files to 1.x ones.
UPDATE_INFOS_CMD = ('python tools/dataset_converters/update_infos_to_v2.py '
                    '--dataset nuscenes --pkl-path {pkl} --out-dir {out}')
#: Why a 0.x info file is made again rather than converted: mmdet3d's
#: ``update_nuscenes_infos`` copies ``gt_boxes`` as they are.
UPDATE_KEEPS_BOXES = ('it copies the boxes as they are, and infos made '
                      'before 1.0.0rc0 hold (w, l, h, θ) boxes of the old '
                      'convention')
#: What ``tools/create_data.py`` costs (docs/data_preparation.md: trainval
#: extrapolated at 124 s on 2 cores).
CREATE_DATA_TIME = 'about 2 minutes for v1.0-trainval on 2 cores'


def _is_remote(path: Optional[str]) -> bool:
    return path is not None and '://' in str(path)


def _create_data_cmd(data_root: Optional[str]) -> str:
    return CREATE_DATA_CMD.format(root=data_root or 'data/nuscenes')


def check_data_files(dataset: str, data_root: Optional[str],
                     ann_file: str) -> None:
    """Check that ``data_root`` and the info file exist.

    Paths with a URI prefix (``s3://``) are not checked.

    Args:
        dataset (str): Dataset name for the message prefix.
        data_root (str, optional): The dataset's ``data_root``.
        ann_file (str): The info file, already joined with ``data_root``
            (as ``BaseDataset`` does).

    Raises:
        ValueError: If ``ann_file`` is empty.
        FileNotFoundError: If ``data_root`` or ``ann_file`` does not exist.
    """
    if not ann_file:
        raise ValueError(
            f"{dataset}: ann_file is not set; expected the info file made by "
            "tools/create_data.py, e.g. ann_file='nuscenes_infos_train.pkl' "
            'with data_root set to the nuScenes folder.')
    if data_root and not _is_remote(data_root) and not osp.isdir(data_root):
        raise FileNotFoundError(
            f'{dataset}: data_root {data_root!r} is not a folder (absolute: '
            f'{osp.abspath(data_root)!r}); set data_root to the nuScenes '
            'folder that holds samples/, sweeps/ and the info .pkl files.')
    if not _is_remote(ann_file) and not osp.isfile(ann_file):
        root = data_root or osp.dirname(ann_file) or '.'
        raise FileNotFoundError(
            f'{dataset}: ann_file {ann_file!r} does not exist; fix ann_file '
            f'(relative to data_root={data_root!r}) or create the info files '
            f'with `{_create_data_cmd(root)}`.')


def describe_info_format(obj: Any) -> str:
    """Name the info-file format of a loaded object.

    Args:
        obj: What the info file unpickled to.

    Returns:
        str: ``'1.x'`` (``metainfo`` and ``data_list`` keys), ``'0.x'``
        (``infos`` and ``metadata`` keys) or ``'unknown'``.
    """
    if isinstance(obj, dict):
        if 'data_list' in obj and 'metainfo' in obj:
            return '1.x'
        if 'infos' in obj and 'metadata' in obj:
            return '0.x'
    return 'unknown'


def _format_error(dataset: str, ann_file: str, obj: Any) -> Exception:
    """The error for an info file that loaded but is not in 1.x format."""
    fmt = describe_info_format(obj)
    out = osp.dirname(ann_file) or '.'
    if fmt == '0.x':
        return ValueError(
            f"{dataset}: info file {ann_file!r} is in mmdet3d 0.x format "
            f"(keys 'infos', 'metadata'); mmdet3d 1.x datasets read keys "
            f"'metainfo' and 'data_list'. Create it again with "
            f'`{_create_data_cmd(out)}` ({CREATE_DATA_TIME}). Convert it '
            "with mmdet3d's "
            f'`{UPDATE_INFOS_CMD.format(pkl=ann_file, out=out)}` only if it '
            f'was made by mmdet3d >= 1.0.0rc0: {UPDATE_KEEPS_BOXES}.')
    got = (f'keys {sorted(map(str, obj))}' if isinstance(obj, dict) else
           f'a {type(obj).__name__}')
    return ValueError(
        f"{dataset}: info file {ann_file!r} is not an mmdet3d 1.x info "
        f"file: expected a dict with keys 'metainfo' and 'data_list', got "
        f'{got}; create it with `{_create_data_cmd(out)}`.')


@contextlib.contextmanager
def info_file_errors(dataset: str, ann_file: str) -> Iterator[None]:
    """Turn errors of loading an info file into ones that name the fix.

    Wrap ``BaseDataset.load_data_list``; catches unpickling errors of a
    corrupt or truncated file and mmengine's format errors (after which the
    file is read once more to say which format it has).

    Args:
        dataset (str): Dataset name for the message prefix.
        ann_file (str): The info file being loaded.

    Raises:
        ValueError: For a corrupt, truncated or wrongly formatted file.
    """
    try:
        yield
    except (pickle.UnpicklingError, EOFError) as e:
        out = osp.dirname(ann_file) or '.'
        raise ValueError(
            f'{dataset}: cannot read info file {ann_file!r}: it is corrupt '
            f'or truncated ({type(e).__name__}: {e}); delete it and create '
            f'it again with `{_create_data_cmd(out)}`.') from e
    except (ValueError, TypeError) as e:
        if 'data_list and metainfo' not in str(e) and \
                'should be a dict' not in str(e):
            raise
        try:
            with open(ann_file, 'rb') as f:
                obj = pickle.load(f)
        except Exception:  # noqa: BLE001  the original error says enough
            raise e
        raise _format_error(dataset, ann_file, obj) from e


@contextlib.contextmanager
def data_prefix_errors(dataset: str, data_prefix: dict) -> Iterator[None]:
    """Name the missing ``data_prefix['sweeps']`` of infos with sweeps.

    ``Det3DDataset``'s default ``data_prefix`` has no ``'sweeps'`` key, so
    infos with LiDAR sweeps fail with a bare ``KeyError: 'sweeps'``.

    Args:
        dataset (str): Dataset name for the message prefix.
        data_prefix (dict): The dataset's ``data_prefix``.

    Raises:
        ValueError: When ``'sweeps'`` is missing from ``data_prefix``.
    """
    try:
        yield
    except KeyError as e:
        if e.args != ('sweeps', ) or 'sweeps' in data_prefix:
            raise
        raise ValueError(
            f"{dataset}: the infos have LiDAR sweeps ('lidar_sweeps') but "
            f"data_prefix has no 'sweeps' key (data_prefix={data_prefix}); "
            "add sweeps='sweeps/LIDAR_TOP' to data_prefix, as in "
            "data_prefix=dict(pts='samples/LIDAR_TOP', img='', "
            "sweeps='sweeps/LIDAR_TOP').") from e


def check_classes(dataset: str, classes: Any, known: Sequence[str]) -> None:
    """Check the class names a config selects with ``metainfo``.

    Args:
        dataset (str): Dataset name for the message prefix.
        classes: ``metainfo['classes']`` as given in the config.
        known (Sequence[str]): The dataset's classes
            (``METAINFO['classes']``).

    Raises:
        TypeError: If ``classes`` is not a list or tuple of strings.
        ValueError: If a name is unknown or listed twice.
    """
    known = list(known)
    if isinstance(classes, str) or not isinstance(classes, (list, tuple)):
        raise TypeError(
            f'{dataset}: metainfo.classes must be a list of class names, got '
            f'{classes!r} ({type(classes).__name__}); write e.g. '
            f"metainfo=dict(classes=['car', 'pedestrian']).")
    not_str = [c for c in classes if not isinstance(c, str)]
    if not_str:
        raise TypeError(
            f'{dataset}: metainfo.classes must hold class names (str), got '
            f'{not_str}; the known classes are {known}.')
    unknown = [c for c in classes if c not in known]
    if unknown:
        raise ValueError(
            f'{dataset}: metainfo.classes has unknown class names {unknown}; '
            f'the known classes are {known}. Fix the spelling, or list a '
            'subset of the known classes.')
    twice = sorted({c for c in classes if list(classes).count(c) > 1})
    if twice:
        raise ValueError(
            f'{dataset}: metainfo.classes lists {twice} more than once; list '
            'each class once (the order sets the label numbers).')


def _sample_files(info: dict) -> dict:
    """Map each point-cloud path of a sample to what it is."""
    files = {}
    if info.get('lidar_path'):
        files[osp.normpath(info['lidar_path'])] = 'LiDAR file'
    for i, sweep in enumerate(info.get('lidar_sweeps') or ()):
        path = (sweep.get('lidar_points') or {}).get('lidar_path')
        if path:
            files[osp.normpath(path)] = f'LiDAR sweep file (sweep {i})'
    for cam, img in (info.get('images') or {}).items():
        if img.get('img_path'):
            files[osp.normpath(img['img_path'])] = f'{cam} image'
    return files


@contextlib.contextmanager
def sample_file_errors(dataset, index: int) -> Iterator[None]:
    """Name the sample and the fix when its pipeline misses a file.

    Wrap ``prepare_data``: a ``FileNotFoundError`` raised while loading
    sample ``index`` (``LoadPointsFromFile``, ``LoadPointsFromMultiSweeps``,
    image loading) is raised again with the sample index and token, which
    file of the sample it is, and what to check.

    Args:
        dataset (BaseDataset): The dataset (it provides ``get_data_info``,
            ``data_root``, ``ann_file``).
        index (int): The sample being prepared.

    Raises:
        FileNotFoundError: With the context above.
    """
    try:
        yield
    except FileNotFoundError as e:
        name = type(dataset).__name__
        missing = e.filename or str(e)
        try:
            info = dataset.get_data_info(index)
        except Exception:  # noqa: BLE001  describe what we can
            info = {}
        what = _sample_files(info).get(
            osp.normpath(str(missing)), 'file') if e.filename else 'file'
        token = info.get('token', '?')
        root = getattr(dataset, 'data_root', None)
        raise FileNotFoundError(
            f'{name}: sample {index} (token {token}) of {dataset.ann_file!r}: '
            f'{what} {missing!r} does not exist. Check that data_root='
            f'{root!r} and data_prefix point at the nuScenes files the info '
            f'file was made from; if files are missing or moved, create the '
            f'info files again with `{_create_data_cmd(root)}`.') from e
