"""Ground truth of a nuScenes split as arrays, cached on disk.

The devkit loads the tables (``NuScenes(...)``) and builds a ``DetectionBox``
per annotation (``load_gt``) at every evaluation: on ``v1.0-trainval`` that
is most of a minute and gigabytes before any prediction is looked at.
:func:`load_ground_truth` does it once with the devkit's own code (so the
boxes are the devkit's), keeps what the evaluation needs as arrays and saves
them to ``<cache_dir>/gt_<version>_<split>_<key>.npz``. The key hashes the
size and modification time of every table file, the devkit version and
this file's format version: editing or replacing the tables makes a new
cache file (old ones of the same version and split are removed).

What is kept, besides the boxes: each sample's ego position (from its
``LIDAR_TOP`` ego pose, for the distance filter), and each sample's bicycle
racks as the edge vectors ``points_in_box`` uses (for the bike-rack filter).
"""
import glob
import hashlib
import io
import os
import os.path as osp
import time
from importlib.metadata import version as package_version
from typing import NamedTuple, Optional

import numpy as np
from mmengine.logging import print_log
from nuscenes import NuScenes
from nuscenes.eval.common.loaders import load_gt
from nuscenes.eval.common.utils import quaternion_yaw
from nuscenes.eval.detection.constants import DETECTION_NAMES
from nuscenes.eval.detection.data_classes import DetectionBox
from nuscenes.utils.data_classes import Box
from pyquaternion import Quaternion

from ...fileio.atomic import atomic_write
from .nusc_format import ATTRIBUTES, NO_ATTRIBUTE

#: Changes when the cached arrays change meaning.
FORMAT_VERSION = 1
#: Evaluation split of each version, as mmdet3d's metric picks it.
EVAL_SETS = {'v1.0-mini': 'mini_val', 'v1.0-trainval': 'val'}


class GroundTruth(NamedTuple):
    """A split's ground truth, sample by sample, in the devkit's order.

    ``box_start`` / ``rack_start`` (length samples + 1) delimit each
    sample's boxes and bicycle racks.
    """
    sample_tokens: np.ndarray   # (S,) str
    ego_translation: np.ndarray  # (S, 3)
    box_start: np.ndarray       # (S + 1,) int64
    translation: np.ndarray     # (G, 3)
    size: np.ndarray            # (G, 3)
    yaw: np.ndarray             # (G,) devkit quaternion_yaw
    velocity: np.ndarray        # (G, 2), nan where unknown
    num_pts: np.ndarray         # (G,) lidar + radar points
    labels: np.ndarray          # (G,) index into DETECTION_NAMES
    attrs: np.ndarray           # (G,) index into ATTRIBUTES or -1
    rack_start: np.ndarray      # (S + 1,) int64
    rack_p1: np.ndarray         # (R, 3) corner 0
    rack_axes: np.ndarray       # (R, 3, 3) rows i, j, k = edges from p1
    rack_norms: np.ndarray      # (R, 3) i.i, j.j, k.k


def eval_set_of(version: str) -> str:
    """The split mmdet3d's metric evaluates for ``version``."""
    if version not in EVAL_SETS:
        raise ValueError(
            f'SafeNuScenesMetric: cannot evaluate nuScenes version '
            f'{version!r}; expected one of {sorted(EVAL_SETS)} (the devkit '
            'has no ground truth for v1.0-test); use format_only=True with '
            'a jsonfile_prefix to write the submission file instead')
    return EVAL_SETS[version]


def cache_key(table_dir: str) -> str:
    """Hash of the table files' names, sizes and modification times."""
    digest = hashlib.sha256(
        f'format={FORMAT_VERSION};nuscenes-devkit='
        f'{package_version("nuscenes-devkit")}'.encode())
    for path in sorted(glob.glob(osp.join(table_dir, '*.json'))):
        stat = os.stat(path)
        entry = f'{osp.basename(path)}:{stat.st_size}:{stat.st_mtime_ns};'
        digest.update(entry.encode())
    return digest.hexdigest()[:16]


def default_cache_dir() -> str:
    """Where the ground truth is cached when ``gt_cache_dir`` is not set:
    the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``), never
    the dataset, which may be read-only or shared."""
    base = os.environ.get('XDG_CACHE_HOME') or osp.expanduser('~/.cache')
    return osp.join(base, 'mmdet3d_plugin', 'nuscenes_eval')


def load_ground_truth(data_root: str,
                      version: str,
                      cache_dir: Optional[str] = None) -> GroundTruth:
    """The evaluation split's ground truth, from the cache when valid.

    Args:
        data_root (str): nuScenes root (holds ``<version>/*.json``).
        version (str): ``v1.0-mini`` or ``v1.0-trainval``.
        cache_dir (str, optional): Folder of the cache files. Defaults to
            :func:`default_cache_dir`. Files are named per dataset (its
            resolved table folder), version and split.

    Returns:
        GroundTruth: The arrays.
    """
    eval_set = eval_set_of(version)
    table_dir = osp.join(data_root, version)
    if not osp.isdir(table_dir):
        raise FileNotFoundError(
            f'SafeNuScenesMetric: no nuScenes tables at {table_dir}; '
            'expected the <version>/*.json tables under data_root; set the '
            "metric's data_root to the dataset root")
    cache_dir = cache_dir or default_cache_dir()
    dataset = hashlib.sha256(
        osp.realpath(table_dir).encode()).hexdigest()[:8]
    stem = f'gt_{version}_{eval_set}_{dataset}_'
    path = osp.join(cache_dir, f'{stem}{cache_key(table_dir)}.npz')
    if osp.exists(path):
        with np.load(path) as data:
            return GroundTruth(**{k: data[k] for k in GroundTruth._fields})
    start = time.perf_counter()
    gt = build_ground_truth(data_root, version, eval_set)
    buffer = io.BytesIO()
    np.savez(buffer, **gt._asdict())
    try:
        atomic_write(buffer.getvalue(), path, durable=False)
        for old in glob.glob(osp.join(cache_dir, f'{stem}*.npz')):
            if old != path:
                os.remove(old)
        where = f'cached in {path}'
    except OSError as exc:  # a read-only dataset: evaluate uncached
        where = f'not cached ({exc}); set gt_cache_dir to a writable folder'
    print_log(
        f'SafeNuScenesMetric: loaded the {eval_set} ground truth '
        f'({len(gt.sample_tokens)} samples, {len(gt.labels)} boxes) from '
        f'{table_dir} in {time.perf_counter() - start:.1f} s; {where}',
        logger='current')
    return gt


def build_ground_truth(data_root: str, version: str,
                       eval_set: str) -> GroundTruth:
    """Load the split with the devkit (``NuScenes``, ``load_gt``) and keep
    arrays."""
    nusc = NuScenes(version=version, dataroot=data_root, verbose=False)
    boxes = load_gt(nusc, eval_set, DetectionBox, verbose=False)
    tokens = boxes.sample_tokens
    ego, counts, rack_counts, racks = [], [], [], []
    for token in tokens:
        sample = nusc.get('sample', token)
        sd_record = nusc.get('sample_data', sample['data']['LIDAR_TOP'])
        ego.append(nusc.get('ego_pose', sd_record['ego_pose_token'])
                   ['translation'])
        counts.append(len(boxes[token]))
        anns = [nusc.get('sample_annotation', a) for a in sample['anns']]
        sample_racks = [
            Box(a['translation'], a['size'], Quaternion(a['rotation']))
            for a in anns
            if a['category_name'] == 'static_object.bicycle_rack'
        ]
        rack_counts.append(len(sample_racks))
        racks.extend(sample_racks)
    flat = boxes.all
    p1, axes, norms = [], [], []
    for rack in racks:  # what points_in_box computes from the corners
        corners = rack.corners()
        edges = np.stack([corners[:, 4], corners[:, 1], corners[:, 3]
                          ]) - corners[:, 0]
        p1.append(corners[:, 0])
        axes.append(edges)
        norms.append([np.dot(e, e) for e in edges])
    return GroundTruth(
        sample_tokens=np.array(tokens, dtype=str),
        ego_translation=np.array(ego, np.float64).reshape(-1, 3),
        box_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        translation=np.array([b.translation for b in flat],
                             np.float64).reshape(-1, 3),
        size=np.array([b.size for b in flat], np.float64).reshape(-1, 3),
        yaw=np.array([quaternion_yaw(Quaternion(b.rotation)) for b in flat],
                     np.float64),
        velocity=np.array([b.velocity for b in flat],
                          np.float64).reshape(-1, 2),
        num_pts=np.array([b.num_pts for b in flat], np.int64),
        labels=np.array([DETECTION_NAMES.index(b.detection_name)
                         for b in flat], np.int64),
        attrs=np.array([
            NO_ATTRIBUTE if b.attribute_name == '' else
            ATTRIBUTES.index(b.attribute_name) for b in flat
        ], np.int64),
        rack_start=np.concatenate([[0], np.cumsum(rack_counts)
                                   ]).astype(np.int64),
        rack_p1=np.array(p1, np.float64).reshape(-1, 3),
        rack_axes=np.array(axes, np.float64).reshape(-1, 3, 3),
        rack_norms=np.array(norms, np.float64).reshape(-1, 3))
