"""Simulation behind :mod:`.writer`: drives and objects; :mod:`.render`
turns them into LiDAR frames and camera images.

The world has a flat ground plane (global ``z = 0``), static clutter (two
walls along the route and a dozen poles) and objects of all ten nuScenes
detection classes with class-typical sizes and reflectances, moving at
constant velocity along their heading. The ego drives at constant speed and
yaw rate. LiDAR points of an object lie on the faces of its box that face the
sensor; ground and clutter points inside a box are removed, so a box holds
exactly its object's points. All randomness comes from the generator passed
in, so a seed fixes everything.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from pyquaternion import Quaternion

from ..constants import NUSCENES_CLASSES

DETECTION_CLASSES = NUSCENES_CLASSES


@dataclass(frozen=True)
class ClassSpec:
    """How objects of one detection class are simulated.

    Args:
        categories (tuple): ``(category name, probability, size scale)``.
        wlh (tuple): Mean ``(width, length, height)`` in metres.
        intensity (float): Mean LiDAR intensity of the object's points.
        p_moving (float): Probability that an instance moves.
        speed (tuple): ``(min, max)`` speed of a moving instance in m/s.
        max_range (float): Largest ``|x|`` / ``|y|`` in the ego frame.
        weight (float): Relative frequency beyond the one instance per class
            every scene gets.
        radar (bool): Whether annotations get radar point counts (there is
            no radar data; only ``num_radar_pts``).
    """
    categories: Tuple[Tuple[str, float, float], ...]
    wlh: Tuple[float, float, float]
    intensity: float
    p_moving: float
    speed: Tuple[float, float] = (0.0, 0.0)
    max_range: float = 38.0
    weight: float = 1.0
    radar: bool = False


CLASS_SPECS: Dict[str, ClassSpec] = {
    'car':
    ClassSpec((('vehicle.car', 1.0, 1.0), ), (1.95, 4.62, 1.73),
              intensity=28.,
              p_moving=0.5,
              speed=(3.0, 9.0),
              weight=6.0,
              radar=True),
    'truck':
    ClassSpec((('vehicle.truck', 1.0, 1.0), ), (2.52, 6.94, 2.85),
              intensity=36.,
              p_moving=0.4,
              speed=(3.0, 7.0),
              weight=1.5,
              radar=True),
    'construction_vehicle':
    ClassSpec((('vehicle.construction', 1.0, 1.0), ), (2.85, 6.37, 3.19),
              intensity=48.,
              p_moving=0.2,
              speed=(0.5, 2.0),
              weight=0.5,
              radar=True),
    'bus':
    ClassSpec(
        (('vehicle.bus.rigid', 0.85, 1.0), ('vehicle.bus.bendy', 0.15, 1.0)),
        (2.94, 11.0, 3.47),
        intensity=42.,
        p_moving=0.5,
        speed=(3.0, 7.0),
        weight=0.5,
        radar=True),
    'trailer':
    ClassSpec((('vehicle.trailer', 1.0, 1.0), ), (2.92, 12.3, 3.87),
              intensity=32.,
              p_moving=0.2,
              speed=(2.0, 5.0),
              weight=0.5,
              radar=True),
    'barrier':
    ClassSpec((('movable_object.barrier', 1.0, 1.0), ), (2.51, 0.50, 0.99),
              intensity=62.,
              p_moving=0.0,
              max_range=27.0,
              weight=2.5),
    'motorcycle':
    ClassSpec((('vehicle.motorcycle', 1.0, 1.0), ), (0.77, 2.11, 1.47),
              intensity=22.,
              p_moving=0.5,
              speed=(3.0, 8.0),
              max_range=34.0,
              weight=1.0,
              radar=True),
    'bicycle':
    ClassSpec((('vehicle.bicycle', 1.0, 1.0), ), (0.61, 1.70, 1.29),
              intensity=16.,
              p_moving=0.5,
              speed=(2.0, 5.0),
              max_range=34.0,
              weight=1.0),
    'pedestrian':
    ClassSpec((('human.pedestrian.adult', 0.85, 1.0),
               ('human.pedestrian.construction_worker', 0.07, 1.0),
               ('human.pedestrian.police_officer', 0.04, 1.0),
               ('human.pedestrian.child', 0.04, 0.75)), (0.67, 0.73, 1.77),
              intensity=10.,
              p_moving=0.6,
              speed=(0.8, 1.6),
              max_range=34.0,
              weight=4.0),
    'traffic_cone':
    ClassSpec((('movable_object.trafficcone', 1.0, 1.0), ), (0.41, 0.42, 1.08),
              intensity=92.,
              p_moving=0.0,
              max_range=27.0,
              weight=2.5),
}

# LIDAR_TOP: 32 beams (HDL-32E), mounted as in nuScenes (x to the right of
# the ego, y forward).
LIDAR_TRANSLATION = (0.943713, 0.0, 1.84023)
LIDAR_YAW = -np.pi / 2
LIDAR_HEIGHT = LIDAR_TRANSLATION[2]
BEAM_ELEVATIONS_DEG = -30.67 + 1.33 * np.arange(32)

# name: (translation in the ego frame, yaw, focal length at 1600x900).
CAMERAS = (
    ('CAM_FRONT', (1.70079, 0.01594, 1.51095), 0.0, 1266.4),
    ('CAM_FRONT_RIGHT', (1.55084, -0.49395, 1.49574), np.deg2rad(-55), 1260.8),
    ('CAM_FRONT_LEFT', (1.52387, 0.49463, 1.50932), np.deg2rad(55), 1272.6),
    ('CAM_BACK', (0.02832, 0.00345, 1.57910), np.pi, 809.2),
    ('CAM_BACK_LEFT', (1.03569, 0.48479, 1.59097), np.deg2rad(110), 1256.7),
    ('CAM_BACK_RIGHT', (1.04852, -0.48056, 1.56239), np.deg2rad(-110), 1259.5),
)
# Camera axes (x right, y down, z forward) in the ego frame for yaw 0.
_CAM_AXES = np.array([[0., 0., 1.], [-1., 0., 0.], [0., -1., 0.]])

KEYFRAME_INTERVAL_US = 500_000  # key frames at 2 Hz, as in nuScenes
#: Fewest ``points_per_frame``: below, the objects' points would crowd out
#: the ground.
MIN_POINTS_PER_FRAME = 1000


@dataclass
class SyntheticNuScenesConfig:
    """Size knobs of the generated dataset.

    Args:
        samples_per_scene (int): Key frames per scene. With 1, instances
            have one annotation each and no velocity (the devkit gives nan,
            as for such instances of nuScenes). Defaults to 10.
        sweeps_per_sample (int): LiDAR sweeps between two key frames (9 is
            nuScenes' 20 Hz LiDAR at 2 Hz key frames). Defaults to 9.
        ground_points_per_ring (int): Ground points per beam that hits the
            ground (about 23 beams do). Defaults to 64.
        object_point_density (float): Object points per square metre of
            visible box surface at 1 m; divided by the distance. Defaults to
            100.
        clutter_points (int): Wall and pole points per key frame. Defaults to
            400.
        sweep_point_fraction (float): Fraction of points kept in sweeps (not
            key frames), to keep the dataset small. Defaults to 0.4.
        min_objects (int): Fewest objects per scene. Defaults to 16.
        max_objects (int): Most objects per scene. Defaults to 24.
        image_size (tuple): Camera image ``(width, height)``. Defaults to
            ``(160, 90)``.
        points_per_frame (int, optional): Points of every LiDAR frame, key
            frames and sweeps alike (``sweep_point_fraction`` is then not
            used): 34720 is the average of nuScenes' HDL-32E. Ground,
            clutter and the points on each object scale together (see
            :func:`.render.render_lidar_frame`), so the objects of the
            ground-truth database are as dense as their scene. Defaults to
            None: the knobs above, about 2700 points per key frame, and
            the same bytes as before this option existed.
    """
    samples_per_scene: int = 10
    sweeps_per_sample: int = 9
    ground_points_per_ring: int = 64
    object_point_density: float = 100.0
    clutter_points: int = 400
    sweep_point_fraction: float = 0.4
    min_objects: int = 16
    max_objects: int = 24
    image_size: Tuple[int, int] = field(default=(160, 90))
    points_per_frame: Optional[int] = None

    def __post_init__(self):
        if self.samples_per_scene < 1:
            raise ValueError(
                'SyntheticNuScenesConfig: samples_per_scene must be >= 1 '
                '(>= 2 for instances with velocities); got '
                f'{self.samples_per_scene}.')
        if not 0 <= self.sweeps_per_sample <= 19:
            raise ValueError(
                'SyntheticNuScenesConfig: sweeps_per_sample must be in '
                f'[0, 19]; got {self.sweeps_per_sample}.')
        if not 0 < self.sweep_point_fraction <= 1:
            raise ValueError(
                'SyntheticNuScenesConfig: sweep_point_fraction must be in '
                f'(0, 1]; got {self.sweep_point_fraction}.')
        if not len(DETECTION_CLASSES) <= self.min_objects <= self.max_objects:
            raise ValueError(
                'SyntheticNuScenesConfig: expected '
                f'{len(DETECTION_CLASSES)} <= min_objects <= max_objects '
                '(every scene holds every class); got '
                f'min_objects={self.min_objects}, '
                f'max_objects={self.max_objects}.')
        ppf = self.points_per_frame
        if ppf is not None and (isinstance(ppf, bool) or not isinstance(
                ppf, int) or ppf < MIN_POINTS_PER_FRAME):
            raise ValueError(
                'SyntheticNuScenesConfig: points_per_frame must be None or '
                f'an int >= {MIN_POINTS_PER_FRAME} (34720 is nuScenes\' '
                f'average); got {ppf!r}.')


# ----------------------------------------------------------------------------
# Geometry helpers
# ----------------------------------------------------------------------------
def _rot_z(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.], [s, c, 0.], [0., 0., 1.]])


def yaw_quaternion(yaw: float) -> List[float]:
    """``[w, x, y, z]`` of a rotation by ``yaw`` about z."""
    return [float(np.cos(yaw / 2)), 0.0, 0.0, float(np.sin(yaw / 2))]


def matrix_quaternion(rot: np.ndarray) -> List[float]:
    """``[w, x, y, z]`` of a 3x3 rotation matrix."""
    return [float(v) for v in Quaternion(matrix=rot).elements]


def _transform(rot: np.ndarray, trans: np.ndarray) -> np.ndarray:
    mat = np.eye(4)
    mat[:3, :3] = rot
    mat[:3, 3] = trans
    return mat


def _rigid_inverse(mat: np.ndarray) -> np.ndarray:
    return _transform(mat[:3, :3].T, -mat[:3, :3].T @ mat[:3, 3])


def _apply(mat: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return pts @ mat[:3, :3].T + mat[:3, 3]


def _wrap_angle(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def points_in_boxes(points: np.ndarray, centers: np.ndarray,
                    sizes_lwh: np.ndarray, yaws: np.ndarray) -> np.ndarray:
    """Which points lie in which yaw-rotated boxes (boundaries included).

    Args:
        points (np.ndarray): ``(N, 3)`` points.
        centers (np.ndarray): ``(M, 3)`` box centres in the same frame.
        sizes_lwh (np.ndarray): ``(M, 3)`` sizes along the box's x, y, z.
        yaws (np.ndarray): ``(M,)`` rotations about z.

    Returns:
        np.ndarray: ``(N, M)`` boolean mask.
    """
    if len(centers) == 0:
        return np.zeros((len(points), 0), dtype=bool)
    d = points[:, None, :] - centers[None, :, :]
    c, s = np.cos(yaws)[None], np.sin(yaws)[None]
    lx = d[..., 0] * c + d[..., 1] * s
    ly = -d[..., 0] * s + d[..., 1] * c
    half = sizes_lwh[None] / 2
    return ((np.abs(lx) <= half[..., 0]) & (np.abs(ly) <= half[..., 1])
            & (np.abs(d[..., 2]) <= half[..., 2]))


# ----------------------------------------------------------------------------
# Simulation
# ----------------------------------------------------------------------------
@dataclass
class EgoMotion:
    xy0: np.ndarray
    yaw0: float
    speed: float
    yaw_rate: float

    def pose(self, t: float) -> Tuple[np.ndarray, float]:
        """Global ``(x, y, z)`` and yaw at ``t`` seconds into the scene."""
        yaw = self.yaw0 + self.yaw_rate * t
        if abs(self.yaw_rate) < 1e-9:
            dxy = self.speed * t * np.array(
                [np.cos(self.yaw0), np.sin(self.yaw0)])
        else:
            r = self.speed / self.yaw_rate
            dxy = r * np.array([
                np.sin(yaw) - np.sin(self.yaw0),
                -np.cos(yaw) + np.cos(self.yaw0)
            ])
        xy = self.xy0 + dxy
        return np.array([xy[0], xy[1], 0.0]), float(yaw)

    def ego2global(self, t: float) -> np.ndarray:
        trans, yaw = self.pose(t)
        return _transform(_rot_z(yaw), trans)


@dataclass
class SceneObject:
    name: str  # detection class
    category: str
    wlh: np.ndarray
    xy_ref: np.ndarray  # global position at t_ref
    t_ref: float
    yaw: float
    speed: float
    first: int  # first annotated key frame
    last: int  # last annotated key frame
    intensity: float
    attribute: Optional[str]
    # Derived once (the fields above do not change after construction).
    radius: float = field(init=False, repr=False, compare=False)
    heading: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.radius = float(np.hypot(self.wlh[0], self.wlh[1]) / 2)
        self.heading = np.array([np.cos(self.yaw), np.sin(self.yaw)])

    def center(self, t: float) -> np.ndarray:
        xy = self.xy_ref + self.speed * (t - self.t_ref) * self.heading
        return np.array([xy[0], xy[1], self.wlh[2] / 2])


@dataclass
class Scene:
    index: int
    name: str
    ego: EgoMotion
    frame_times: np.ndarray  # seconds, all LiDAR frames
    keyframe_ids: List[int]  # indices into frame_times
    objects: List[SceneObject]
    poles: np.ndarray  # (P, 3): x, y, height
    walls: np.ndarray  # (W, 5): x0, y0, x1, y1, height
    t0_us: int

    def timestamp_us(self, frame: int) -> int:
        """Timestamp of a LiDAR frame in microseconds."""
        return self.t0_us + int(round(self.frame_times[frame] * 1e6))

    def present(self, obj: SceneObject, t: float) -> bool:
        kf_t = self.frame_times[self.keyframe_ids]
        return kf_t[obj.first] - 1e-6 <= t <= kf_t[obj.last] + 1e-6


def _attribute(rng: np.random.Generator, name: str,
               moving: bool) -> Optional[str]:
    if name in ('barrier', 'traffic_cone'):
        return None
    if name == 'pedestrian':
        if moving:
            return 'pedestrian.moving'
        return 'pedestrian.standing' if rng.random(
        ) < 0.85 else 'pedestrian.sitting_lying_down'
    if name in ('bicycle', 'motorcycle'):
        if moving:
            return 'cycle.with_rider'
        return 'cycle.without_rider' if rng.random(
        ) < 0.8 else 'cycle.with_rider'
    if moving:
        return 'vehicle.moving'
    return 'vehicle.parked' if rng.random() < 0.7 else 'vehicle.stopped'


def simulate_scene(rng: np.random.Generator, index: int, name: str,
                   cfg: SyntheticNuScenesConfig) -> Scene:
    period = KEYFRAME_INTERVAL_US / (cfg.sweeps_per_sample + 1) / 1e6
    lead = cfg.sweeps_per_sample + 1  # sweeps before the first key frame
    n_frames = lead + (cfg.samples_per_scene - 1) * lead + 1
    frame_times = np.arange(n_frames) * period
    keyframe_ids = [lead + k * lead for k in range(cfg.samples_per_scene)]
    kf_times = frame_times[keyframe_ids]

    ego = EgoMotion(
        xy0=np.array([rng.uniform(300, 1700),
                      rng.uniform(300, 1700)]),
        yaw0=float(rng.uniform(-np.pi, np.pi)),
        speed=float(rng.uniform(0.0, 5.0)) if index % 5 else 0.0,
        yaw_rate=float(rng.uniform(-0.06, 0.06)))
    ego_poses = [ego.pose(t) for t in kf_times]

    names = list(DETECTION_CLASSES)
    weights = np.array([CLASS_SPECS[n].weight for n in names])
    n_total = int(rng.integers(cfg.min_objects, cfg.max_objects + 1))
    extra = rng.choice(
        names, size=n_total - len(names), p=weights / weights.sum())
    wanted = names + list(extra)

    objects: List[SceneObject] = []
    check_times = np.linspace(kf_times[0], kf_times[-1],
                              4 * cfg.samples_per_scene)
    # Centres of the placed objects at check_times, (objects, times, 2).
    tracks: List[np.ndarray] = []
    K = cfg.samples_per_scene
    for cls in wanted:
        spec = CLASS_SPECS[cls]
        for _ in range(200):
            cats = spec.categories
            ci = rng.choice(len(cats), p=[c[1] for c in cats])
            category, _, scale = cats[ci]
            wlh = np.array(spec.wlh) * scale * rng.uniform(0.9, 1.1, size=3)
            if category == 'vehicle.bus.bendy':
                wlh[1] *= 1.5
            if K > 2 and rng.random() < 0.25:
                first = int(rng.integers(0, K - 1))
                last = int(rng.integers(first + 1, K))
            else:
                first, last = 0, K - 1
            ref = (first + last) // 2
            moving = rng.random() < spec.p_moving
            speed = float(rng.uniform(*spec.speed)) if moving else 0.0
            ego_xyz, ego_yaw = ego_poses[ref]
            lim = spec.max_range
            local = rng.uniform(-lim, lim, size=2)
            if cls in ('pedestrian', 'traffic_cone', 'barrier', 'bicycle') \
                    or rng.random() < 0.3:
                yaw = float(rng.uniform(-np.pi, np.pi))
            else:  # along the road
                yaw = ego_yaw + rng.choice([0.0, np.pi]) + rng.normal(0, 0.1)
            yaw = float(_wrap_angle(yaw))
            xy_ref = ego_xyz[:2] + _rot_z(ego_yaw)[:2, :2] @ local
            obj = SceneObject(cls, category, wlh, xy_ref, float(kf_times[ref]),
                              yaw, speed, first, last,
                              float(spec.intensity * rng.uniform(0.8, 1.2)),
                              _attribute(rng, cls, moving))
            track = np.array([obj.center(t)[:2] for t in check_times])
            if _placement_ok(obj, track, objects, tracks, ego, ego_poses,
                             kf_times, check_times, lim):
                objects.append(obj)
                tracks.append(track)
                break
        else:
            if len(objects) < len(DETECTION_CLASSES):
                raise RuntimeError(
                    f'simulate_scene: could not place a {cls!r} in scene '
                    f'{name}; every scene needs one of each class. Try '
                    'another seed.')

    # Static clutter: poles and two walls along the route.
    mid_xyz, mid_yaw = ego.pose(float(kf_times[len(kf_times) // 2]))
    rot = _rot_z(mid_yaw)[:2, :2]
    # Where the objects go: (2, objects * times) centres and radii.
    tracks = np.array(tracks).reshape(-1, 2).T
    radii = np.repeat([o.radius for o in objects], len(check_times))
    poles = []
    for _ in range(500):
        if len(poles) == 12:
            break
        local = rng.uniform(-55, 55, size=2)
        if abs(local[1]) < 6:  # keep the road free
            continue
        xy = mid_xyz[:2] + rot @ local
        if np.all(np.hypot(*(xy[:, None] - tracks)) > radii + 1.0):
            poles.append([xy[0], xy[1], rng.uniform(3.0, 6.0)])
    walls = []
    for side in (-1, 1):
        offset = side * rng.uniform(42, 48)
        a = mid_xyz[:2] + rot @ np.array([-70.0, offset])
        b = mid_xyz[:2] + rot @ np.array([70.0, offset])
        walls.append([a[0], a[1], b[0], b[1], rng.uniform(3.0, 8.0)])

    t0_us = 1531883530_000_000 + index * 3_600_000_000
    return Scene(index, name, ego, frame_times, keyframe_ids, objects,
                 np.array(poles).reshape(-1, 3), np.array(walls), t0_us)


def _placement_ok(obj: SceneObject, track: np.ndarray,
                  placed: Sequence[SceneObject], tracks: Sequence[np.ndarray],
                  ego: EgoMotion, ego_poses, kf_times: np.ndarray,
                  check_times: np.ndarray, lim: float) -> bool:
    # In range and clear of the ego at every annotated key frame.
    for k in range(obj.first, obj.last + 1):
        ego_xyz, ego_yaw = ego_poses[k]
        rel = _rot_z(-ego_yaw)[:2, :2] @ (
            obj.center(kf_times[k])[:2] - ego_xyz[:2])
        if np.abs(rel).max() > lim or np.hypot(*rel) < obj.radius + 3.5:
            return False
    # Clear of the ego and of other objects whenever it exists.
    t_lo, t_hi = kf_times[obj.first], kf_times[obj.last]
    for i, t in enumerate(check_times):
        if not t_lo - 1e-6 <= t <= t_hi + 1e-6:
            continue
        c = track[i]
        if np.hypot(*(c - ego.pose(t)[0][:2])) < obj.radius + 3.0:
            return False
        for other, other_track in zip(placed, tracks):
            if not kf_times[other.first] - 1e-6 <= t <= \
                    kf_times[other.last] + 1e-6:
                continue
            if np.hypot(*(c - other_track[i])) < \
                    obj.radius + other.radius + 0.3:
                return False
    return True


# ----------------------------------------------------------------------------
# LiDAR frames
# ----------------------------------------------------------------------------
