"""A small, deterministic dataset in the official nuScenes layout.

:func:`generate_synthetic_nuscenes` simulates one short drive (see
:mod:`.scene`) per official scene name of a nuScenes version (:mod:`.tables`):
the ten of ``v1.0-mini``, so ``nuscenes.utils.splits.mini_train`` /
``mini_val`` select 8 / 2 of them; the 850 of ``v1.0-trainval`` (``train`` /
``val``: 700 / 150); or the 150 of ``v1.0-test`` (no annotations). It writes
what nuscenes-devkit and mmdet3d's converter read:

* ``<version>/*.json``: all 13 tables (attribute, calibrated_sensor, category,
  ego_pose, instance, log, map, sample, sample_annotation, sample_data, scene,
  sensor, visibility);
* ``samples/LIDAR_TOP/*.pcd.bin`` (key frames) and
  ``sweeps/LIDAR_TOP/*.pcd.bin`` (20 Hz sweeps between them, and one key-frame
  interval before the first key frame, so every key frame has 10 previous
  LiDAR frames): float32 ``(x, y, z, intensity, ring)`` in the sensor frame;
* ``samples/CAM_*/*.jpg``: small JPEG renderings for the six cameras at every
  key frame, calibrated with ``camera_intrinsic``;
* ``maps/*.png``: the map masks named in ``map.json``, which ``NuScenes()``
  opens.

Every instance (none in ``v1.0-test``) has one detection category, an
attribute valid for its class, a visibility, ``num_lidar_pts`` (the key
frame's points in its box, at least 12) and ``num_radar_pts``. Tokens are
MD5 hashes of the seed and the record's identity and all randomness comes
from one seeded generator, so the same seed gives byte-identical files.
With ``points_per_frame`` set (nuScenes density: 34720), every LiDAR frame
holds that many points, from a second generator: the drives, objects,
tokens and annotations are those of the default, and only the points and
``num_lidar_pts`` differ.

:func:`prepare_synthetic_nuscenes` generates the dataset when missing and
runs ``tools/create_data.py``'s preparation (:mod:`..create_data.prepare`,
whose products equal mmdet3d's converter's) when the info files are
missing.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Union

import cv2
import numpy as np

from ..create_data.converter import info_paths
from ..create_data.prepare import create_nuscenes_infos
from .render import (camera_calibrations, render_camera_image,
                     render_lidar_frame)
from .scene import (CLASS_SPECS, LIDAR_TRANSLATION, LIDAR_YAW, Scene,
                    SyntheticNuScenesConfig, matrix_quaternion,
                    points_in_boxes, simulate_scene, yaw_quaternion)
from .tables import (ATTRIBUTES, CATEGORIES, LOCATIONS, TABLES, VISIBILITIES,
                     VISIBILITY_PROBS, check_version, version_is_annotated,
                     version_scene_names)

# Written next to the tables; records what was generated.
MARKER = '.synthetic_nuscenes.json'
#: The marker's ``generator``: the function that wrote the dataset.
GENERATOR = 'projects.mmdet3d_plugin.synthetic.generate_synthetic_nuscenes'
#: ``generator`` of the markers of earlier releases (same data).
EARLIER_GENERATORS = (
    'projects.mmdet3d_plugin.utils.generate_synthetic_nuscenes', )


class _Tokens:
    """Deterministic 32-hex-digit tokens from the seed and a record key."""

    def __init__(self, seed: int):
        self.seed = seed

    def __call__(self, *key) -> str:
        text = '/'.join(str(k) for k in (self.seed, ) + key)
        return hashlib.md5(text.encode()).hexdigest()


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _floats(values) -> List[float]:
    return [float(v) for v in values]


class _Writer:
    """Accumulates the tables and writes the data files of one dataset."""

    def __init__(self,
                 out: Path,
                 seed: int,
                 cfg: SyntheticNuScenesConfig,
                 annotated: bool = True):
        self.out = out
        self.cfg = cfg
        self.annotated = annotated
        self.rng = np.random.default_rng(seed)
        # Dense frames (cfg.points_per_frame) draw from their own stream;
        # self.rng draws what it draws for the default frames, so the
        # drives, objects and annotations are those of the default.
        self.point_rng = np.random.default_rng((seed, 1))
        self.default_cfg = replace(cfg, points_per_frame=None)
        self.tok = _Tokens(seed)
        self.tables: Dict[str, list] = {name: [] for name in TABLES}
        self.cams = camera_calibrations(cfg)
        self.map_logs: Dict[str, List[str]] = {loc: [] for loc in LOCATIONS}

    def write_static_tables(self) -> None:
        tok, tables = self.tok, self.tables
        for name, desc in CATEGORIES:
            tables['category'].append(
                dict(token=tok('category', name), name=name, description=desc))
        for name, desc in ATTRIBUTES:
            tables['attribute'].append(
                dict(
                    token=tok('attribute', name), name=name, description=desc))
        for token, level in VISIBILITIES:
            low, high = level[1:].split('-')
            tables['visibility'].append(
                dict(
                    token=token,
                    level=level,
                    description='visibility of whole object is between '
                    f'{low} and {high} %'))
        for name in ['LIDAR_TOP'] + [cam[0] for cam in self.cams]:
            tables['sensor'].append(
                dict(
                    token=tok('sensor', name),
                    channel=name,
                    modality='lidar' if name == 'LIDAR_TOP' else 'camera'))

    def write_maps(self) -> None:
        # One mask per location: a road cross on an empty background.
        mask = np.zeros((200, 200), dtype=np.uint8)
        mask[90:110, :] = 255
        mask[:, 90:110] = 255
        ok, buf = cv2.imencode('.png', mask)
        for loc in LOCATIONS:
            token = self.tok('map', loc)
            filename = f'maps/{token}.png'
            _write_bytes(self.out / filename, buf.tobytes())
            self.tables['map'].append(
                dict(
                    token=token,
                    log_tokens=self.map_logs[loc],  # filled by the scenes
                    category='semantic_prior',
                    filename=filename))

    def write_scene(self, index: int, name: str) -> None:
        tok, tables, cfg = self.tok, self.tables, self.cfg
        scene = simulate_scene(self.rng, index, name, cfg)
        loc = LOCATIONS[index % len(LOCATIONS)]
        singapore = loc.startswith('singapore')
        vehicle = 'n015' if singapore else 'n008'
        # A valid date and time for any index; the v1.0-mini names (index
        # < 10) are those of the first generator version.
        logfile = (f'{vehicle}-2018-07-{10 + index % 20:02d}-'
                   f'{11 + index % 8:02d}-{7 + index % 50:02d}-'
                   f'{(57 + index // 200) % 60:02d}'
                   f'{"+0800" if singapore else "-0400"}')
        log_token = tok('log', name)
        tables['log'].append(
            dict(
                token=log_token,
                logfile=logfile,
                vehicle=vehicle,
                date_captured=f'2018-07-{10 + index % 20:02d}',
                location=loc))
        self.map_logs[loc].append(log_token)

        calib = {'LIDAR_TOP': tok('calibrated_sensor', name, 'LIDAR_TOP')}
        tables['calibrated_sensor'].append(
            dict(
                token=calib['LIDAR_TOP'],
                sensor_token=tok('sensor', 'LIDAR_TOP'),
                translation=list(LIDAR_TRANSLATION),
                rotation=yaw_quaternion(LIDAR_YAW),
                camera_intrinsic=[]))
        for cam, trans, rot, intrinsic in self.cams:
            calib[cam] = tok('calibrated_sensor', name, cam)
            tables['calibrated_sensor'].append(
                dict(
                    token=calib[cam],
                    sensor_token=tok('sensor', cam),
                    translation=_floats(trans),
                    rotation=matrix_quaternion(rot),
                    camera_intrinsic=intrinsic.tolist()))

        n = cfg.samples_per_scene
        samples = [tok('sample', name, k) for k in range(n)]
        for k in range(n):
            tables['sample'].append(
                dict(
                    token=samples[k],
                    timestamp=scene.timestamp_us(scene.keyframe_ids[k]),
                    prev=samples[k - 1] if k > 0 else '',
                    next=samples[k + 1] if k + 1 < n else '',
                    scene_token=tok('scene', name)))
        keyframes = self._write_lidar(scene, name, logfile, samples, calib)
        self._write_cameras(scene, name, logfile, samples, calib)
        if self.annotated:
            self._write_annotations(scene, name, samples, keyframes)
        tables['scene'].append(
            dict(
                token=tok('scene', name),
                log_token=log_token,
                nbr_samples=n,
                first_sample_token=samples[0],
                last_sample_token=samples[-1],
                name=name,
                description=f'Synthetic drive, {len(scene.objects)} '
                f'objects, ego at {scene.ego.speed:.1f} m/s'))

    def _ego_pose(self, token: str, scene: Scene, t: float, ts: int) -> None:
        trans, yaw = scene.ego.pose(t)
        self.tables['ego_pose'].append(
            dict(
                token=token,
                timestamp=ts,
                rotation=yaw_quaternion(yaw),
                translation=_floats(trans)))

    def _write_lidar(self, scene: Scene, name: str, logfile: str,
                     samples: List[str], calib: Dict[str, str]) -> dict:
        """Key frames and sweeps in one prev/next chain."""
        tok, cfg = self.tok, self.cfg
        n_frames = len(scene.frame_times)
        tokens = [
            tok('sample_data', name, 'LIDAR_TOP', i) for i in range(n_frames)
        ]
        key_index = {fid: k for k, fid in enumerate(scene.keyframe_ids)}
        keyframes = {}
        for i, t in enumerate(scene.frame_times):
            ts = scene.timestamp_us(i)
            is_key = i in key_index
            points, boxes = render_lidar_frame(
                self.rng, scene, float(t), self.default_cfg,
                1.0 if is_key else cfg.sweep_point_fraction)
            if cfg.points_per_frame is not None:
                points, boxes = render_lidar_frame(self.point_rng, scene,
                                                   float(t), cfg, 1.0)
            folder = 'samples' if is_key else 'sweeps'
            filename = f'{folder}/LIDAR_TOP/{logfile}__LIDAR_TOP__{ts}.pcd.bin'
            _write_bytes(self.out / filename, points.tobytes())
            pose = tok('ego_pose', name, 'LIDAR_TOP', i)
            self._ego_pose(pose, scene, float(t), ts)
            # A sweep belongs to the next key frame's sample, as in nuScenes.
            k_next = min(
                int(np.searchsorted(scene.keyframe_ids, i)),
                len(samples) - 1)
            self.tables['sample_data'].append(
                dict(
                    token=tokens[i],
                    sample_token=samples[k_next],
                    ego_pose_token=pose,
                    calibrated_sensor_token=calib['LIDAR_TOP'],
                    timestamp=ts,
                    fileformat='pcd',
                    is_key_frame=is_key,
                    height=0,
                    width=0,
                    filename=filename,
                    prev=tokens[i - 1] if i > 0 else '',
                    next=tokens[i + 1] if i + 1 < n_frames else ''))
            if is_key:
                keyframes[key_index[i]] = (points, boxes)
        return keyframes

    def _write_cameras(self, scene: Scene, name: str, logfile: str,
                       samples: List[str], calib: Dict[str, str]) -> None:
        width, height = self.cfg.image_size
        n = len(samples)
        for cam_index, (cam, trans, rot, intrinsic) in enumerate(self.cams):
            tokens = [
                self.tok('sample_data', name, cam, k) for k in range(n)
            ]
            for k in range(n):
                fid = scene.keyframe_ids[k]
                t, ts = float(scene.frame_times[fid]), scene.timestamp_us(fid)
                filename = f'samples/{cam}/{logfile}__{cam}__{ts}.jpg'
                _write_bytes(
                    self.out / filename,
                    render_camera_image(scene, t, trans, rot, intrinsic,
                                        self.cfg, cam_index))
                pose = self.tok('ego_pose', name, cam, k)
                self._ego_pose(pose, scene, t, ts)
                self.tables['sample_data'].append(
                    dict(
                        token=tokens[k],
                        sample_token=samples[k],
                        ego_pose_token=pose,
                        calibrated_sensor_token=calib[cam],
                        timestamp=ts,
                        fileformat='jpg',
                        is_key_frame=True,
                        height=height,
                        width=width,
                        filename=filename,
                        prev=tokens[k - 1] if k > 0 else '',
                        next=tokens[k + 1] if k + 1 < n else ''))

    def _write_annotations(self, scene: Scene, name: str, samples: List[str],
                           keyframes: dict) -> None:
        tok, rng = self.tok, self.rng
        for obj_index, obj in enumerate(scene.objects):
            inst = tok('instance', name, obj_index)
            keys = list(range(obj.first, obj.last + 1))
            anns = [tok('sample_annotation', name, obj_index, k) for k in keys]
            for j, k in enumerate(keys):
                points, boxes = keyframes[k]
                _, center, lwh, yaw = next(b for b in boxes if b[0] is obj)
                n_pts = int(
                    points_in_boxes(points[:, :3].astype(np.float64),
                                    center[None], lwh[None],
                                    np.array([yaw]))[:, 0].sum())
                radar = CLASS_SPECS[obj.name].radar and \
                    np.hypot(*center[:2]) < 50
                vis = VISIBILITIES[rng.choice(
                    len(VISIBILITIES), p=VISIBILITY_PROBS)][0]
                t = float(scene.frame_times[scene.keyframe_ids[k]])
                self.tables['sample_annotation'].append(
                    dict(
                        token=anns[j],
                        sample_token=samples[k],
                        instance_token=inst,
                        visibility_token=vis,
                        attribute_tokens=[tok('attribute', obj.attribute)]
                        if obj.attribute else [],
                        translation=_floats(obj.center(t)),
                        size=_floats(obj.wlh),
                        rotation=yaw_quaternion(obj.yaw),
                        prev=anns[j - 1] if j > 0 else '',
                        next=anns[j + 1] if j + 1 < len(anns) else '',
                        num_lidar_pts=n_pts,
                        num_radar_pts=int(rng.integers(0, 6)) if radar else 0))
            self.tables['instance'].append(
                dict(
                    token=inst,
                    category_token=tok('category', obj.category),
                    nbr_annotations=len(anns),
                    first_annotation_token=anns[0],
                    last_annotation_token=anns[-1]))

    def write_tables(self, table_dir: Path, marker: dict) -> None:
        """Write the tables and the marker under temporary names, then
        rename the table folder into place."""
        tmp = Path(
            tempfile.mkdtemp(prefix=f'.{table_dir.name}-', dir=self.out))
        try:
            for name, records in self.tables.items():
                with open(tmp / f'{name}.json', 'w') as f:
                    json.dump(records, f, indent=0)
            os.chmod(tmp, 0o755)
            marker_tmp = self.out / f'{MARKER}.tmp-{os.getpid()}'
            marker_tmp.write_text(json.dumps(marker, indent=2) + '\n')
            os.replace(marker_tmp, self.out / MARKER)
            os.rename(tmp, table_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _marker(seed: int, version: str, cfg: SyntheticNuScenesConfig) -> dict:
    config = json.loads(json.dumps(asdict(cfg)))
    if config['points_per_frame'] is None:
        # The marker of the default, as written before the option existed.
        del config['points_per_frame']
    return dict(
        generator=GENERATOR, seed=int(seed), version=version, config=config)


def generate_synthetic_nuscenes(
        out_dir: Union[str, Path],
        seed: int = 0,
        version: str = 'v1.0-mini',
        config: Optional[SyntheticNuScenesConfig] = None,
        scenes: Optional[Sequence[str]] = None) -> Path:
    """Write a small synthetic dataset in the nuScenes layout.

    The table folder ``<out_dir>/<version>`` is written last, under a
    temporary name renamed into place, so its presence marks a complete
    dataset. With the default config, ``v1.0-mini`` holds 10 scenes of 10
    key frames (100 samples, about 16 annotations each), 910 sweeps and 600
    images: about 31 MB (with ``config.points_per_frame=34720``, nuScenes'
    density, about 700 MB). ``v1.0-trainval`` has 850 scenes and
    ``v1.0-test`` 150 (without annotations); keep them small with
    ``config.samples_per_scene``, or write a few of their scenes with
    ``scenes`` (mmdet3d's converter and the devkit's splits take the
    scenes present).

    Args:
        out_dir (str | Path): Dataset root; created if missing.
        seed (int): Seed of all randomness and tokens. Defaults to 0.
        version (str): ``'v1.0-mini'``, ``'v1.0-trainval'`` or
            ``'v1.0-test'``: the table folder, and the official scene names
            written (see :func:`.tables.version_scene_names`), so that the
            devkit's splits of that version select them. Defaults to
            ``'v1.0-mini'``.
        config (SyntheticNuScenesConfig, optional): Size knobs. Defaults to
            ``SyntheticNuScenesConfig()``.
        scenes (Sequence[str], optional): Official scene names of
            ``version`` to write, e.g. a few of the devkit's ``train`` and
            ``val``; each keeps its place among the version's scenes (its
            location and log name), but draws from the seeded generator
            after the scenes written before it, so its contents differ
            from the full version's. Recorded in the marker. Defaults to
            None: every scene of the version.

    Returns:
        Path: ``out_dir``.

    Examples:
        >>> root = generate_synthetic_nuscenes('data/nus_synthetic', seed=0)
        >>> from nuscenes import NuScenes
        >>> nusc = NuScenes('v1.0-mini', dataroot=str(root), verbose=False)
    """
    check_version(version, 'generate_synthetic_nuscenes')
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError('generate_synthetic_nuscenes: seed must be an int; '
                        f'got {type(seed).__name__}.')
    cfg = config if config is not None else SyntheticNuScenesConfig()
    if not isinstance(cfg, SyntheticNuScenesConfig):
        raise TypeError('generate_synthetic_nuscenes: config must be a '
                        'SyntheticNuScenesConfig; got '
                        f'{type(cfg).__name__}.')
    names = version_scene_names(version)
    if scenes is not None:
        unknown = sorted(set(scenes) - set(names))
        if unknown or not scenes or len(set(scenes)) != len(scenes):
            raise ValueError(
                'generate_synthetic_nuscenes: scenes must be distinct '
                f'official scene names of {version} (at least one); got '
                f'{len(scenes)}, {len(set(scenes))} distinct, not '
                f'official: {unknown[:5]}.')
    out = Path(out_dir)
    table_dir = out / version
    if table_dir.exists():
        raise FileExistsError(
            f'generate_synthetic_nuscenes: {table_dir} already exists; '
            'delete it, or use prepare_synthetic_nuscenes, which reuses a '
            'complete dataset.')
    if (out / MARKER).is_file():
        found = json.loads((out / MARKER).read_text()).get('version')
        if found != version:
            raise FileExistsError(
                f'generate_synthetic_nuscenes: {out} holds the generated '
                f'{found}; write {version} into another out_dir (the '
                'versions would share sensor file names).')
    out.mkdir(parents=True, exist_ok=True)

    writer = _Writer(out, seed, cfg, annotated=version_is_annotated(version))
    writer.write_static_tables()
    writer.write_maps()
    marker = _marker(seed, version, cfg)
    if scenes is not None:
        marker['scenes'] = sorted(scenes)
    for index, name in enumerate(names):
        if scenes is None or name in scenes:
            writer.write_scene(index, name)
    writer.write_tables(table_dir, marker)
    return out


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, 'a') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def check_generated_root(
        root: Union[str, Path],
        seed: int = 0,
        version: str = 'v1.0-mini',
        config: Optional[SyntheticNuScenesConfig] = None) -> None:
    """Refuse a root that holds a dataset generated otherwise.

    A root without the generator's marker (e.g. the real v1.0-mini, or
    none yet) passes.

    Args:
        root (str | Path): Dataset root.
        seed (int): Generator seed asked for. Defaults to 0.
        version (str): Dataset version asked for. Defaults to
            ``'v1.0-mini'``.
        config (SyntheticNuScenesConfig, optional): Size knobs asked for.
            Defaults to ``SyntheticNuScenesConfig()``.

    Raises:
        ValueError: The marker names another seed, version or config.
    """
    root = Path(root)
    if not (root / MARKER).is_file():
        return
    cfg = config if config is not None else SyntheticNuScenesConfig()
    found = json.loads((root / MARKER).read_text())
    wanted = _marker(seed, version, cfg)
    if found.get('generator') in EARLIER_GENERATORS:
        found = {**found, 'generator': GENERATOR}  # same data
    if found != wanted:
        raise ValueError(
            f'prepare_synthetic_nuscenes: {root} holds a dataset '
            f'generated with seed={found.get("seed")}, '
            f'config={found.get("config")}; asked for seed={seed}, '
            f'config={wanted["config"]}. Use another root or delete '
            'this one.')


def prepare_synthetic_nuscenes(
        root: Union[str, Path],
        seed: int = 0,
        version: str = 'v1.0-mini',
        config: Optional[SyntheticNuScenesConfig] = None,
        max_sweeps: int = 10,
        gt_database: bool = True) -> Path:
    """Generate the synthetic dataset and its mmdet3d info files if missing.

    A cheap no-op when both exist. Safe to call from several processes at
    once: they serialise on the lock file ``.<root name>.lock`` next to
    ``root``, and the tables and info files are renamed into place only when
    complete. A root without the generator's marker (e.g. the real
    v1.0-mini) is only converted.

    Args:
        root (str | Path): Dataset root.
        seed (int): Generator seed. Defaults to 0.
        version (str): Dataset version (see
            :func:`generate_synthetic_nuscenes`). Defaults to
            ``'v1.0-mini'``.
        config (SyntheticNuScenesConfig, optional): Size knobs of the
            generator. Defaults to ``SyntheticNuScenesConfig()``.
        max_sweeps (int): Sweeps per key frame in the info files. Defaults
            to 10.
        gt_database (bool): Also build mmdet3d's ground-truth database
            (``nuscenes_gt_database/``, ``nuscenes_dbinfos_train.pkl``) for
            ``ObjectSample``. Defaults to True.

    Returns:
        Path: ``root``, holding ``<version>/*.json``, ``samples/``,
        ``sweeps/``, ``maps/``, ``nuscenes_infos_train.pkl``,
        ``nuscenes_infos_val.pkl`` and (with ``gt_database``)
        ``nuscenes_dbinfos_train.pkl`` and ``nuscenes_gt_database/``
        (``v1.0-test``: ``nuscenes_infos_test.pkl`` only).

    Examples:
        >>> from projects.mmdet3d_plugin.synthetic import (
        ...     prepare_synthetic_nuscenes)
        >>> data_root = prepare_synthetic_nuscenes('data/nus_synthetic')
        >>> # then, in a config: data_root=f'{data_root}/'
    """
    root = Path(root)
    cfg = config if config is not None else SyntheticNuScenesConfig()
    with _locked(root.parent / f'.{root.name}.lock'):
        if not (root / version).is_dir():
            generate_synthetic_nuscenes(root, seed, version, cfg)
        else:
            check_generated_root(root, seed, version, cfg)
        if not all(
                p.exists()
                for p in info_paths(root, version, gt_database=gt_database)):
            create_nuscenes_infos(
                root,
                version=version,
                max_sweeps=max_sweeps,
                gt_database=gt_database)
    return root
