"""Sensor data of a simulated scene: LiDAR frames and camera images."""
from typing import List, Tuple

import cv2
import numpy as np

from .scene import (BEAM_ELEVATIONS_DEG, CAMERAS, LIDAR_HEIGHT,
                    LIDAR_TRANSLATION, LIDAR_YAW, Scene,
                    SyntheticNuScenesConfig, _CAM_AXES, _apply, _rigid_inverse,
                    _rot_z, _transform, _wrap_angle, points_in_boxes)


def _ring(xyz: np.ndarray) -> np.ndarray:
    elev = np.degrees(np.arctan2(xyz[:, 2], np.hypot(xyz[:, 0], xyz[:, 1])))
    return np.clip(np.round((elev - BEAM_ELEVATIONS_DEG[0]) / 1.33), 0, 31)


#: Points on one object at the default density: fewest and most.
OBJECT_POINTS = (12, 400)


def _visible_faces(center: np.ndarray, lwh: np.ndarray, yaw: float) -> list:
    """``(axis, sign, area)`` of the box faces that face the sensor at the
    origin."""
    sensor = _rot_z(yaw).T @ (-center)  # sensor in the box frame
    half = lwh / 2
    faces = []
    for axis in range(3):
        other = [a for a in range(3) if a != axis]
        area = lwh[other[0]] * lwh[other[1]]
        for sign in (-1.0, 1.0):
            if sign * sensor[axis] > half[axis]:
                faces.append((axis, sign, area))
    return faces


def _box_point_count(center: np.ndarray, lwh: np.ndarray, yaw: float,
                     n_per_area: float) -> int:
    """Points on a box at the default density: ``n_per_area`` per square
    metre of visible surface at 1 m, divided by the distance, within
    :data:`OBJECT_POINTS`; 0 if no face faces the sensor."""
    faces = _visible_faces(center, lwh, yaw)
    if not faces:
        return 0
    areas = np.array([f[2] for f in faces])
    dist = max(float(np.hypot(center[0], center[1])), 4.0)
    return int(np.clip(n_per_area * areas.sum() / dist, *OBJECT_POINTS))


def _box_surface_points(rng: np.random.Generator, center: np.ndarray,
                        lwh: np.ndarray, yaw: float, n: int) -> np.ndarray:
    """``n`` points on the box faces that face the sensor at the origin."""
    faces = _visible_faces(center, lwh, yaw)
    if not faces:
        return np.zeros((0, 3))
    rot = _rot_z(yaw)
    half = lwh / 2
    areas = np.array([f[2] for f in faces])
    counts = rng.multinomial(n, areas / areas.sum())
    shrink = 0.97
    out = []
    for (axis, sign, _), cnt in zip(faces, counts):
        if cnt == 0:
            continue
        local = rng.uniform(-1, 1, size=(cnt, 3)) * half * shrink
        depth = np.abs(rng.normal(0, 0.03, size=cnt)).clip(max=0.2)
        local[:, axis] = sign * (half[axis] -
                                 np.minimum(depth, half[axis] * 0.5)) * shrink
        out.append(local)
    local = np.concatenate(out)
    return local @ rot.T + center


def _ground_rings() -> List[Tuple[int, float]]:
    """``(ring, radius)`` of the beams that reach the ground within 70 m."""
    rings = []
    for ring_id, elev in enumerate(BEAM_ELEVATIONS_DEG):
        if elev > -1.6:
            break
        r = LIDAR_HEIGHT / np.tan(np.radians(-elev))
        if r <= 70:
            rings.append((ring_id, r))
    return rings


def _background(rng: np.random.Generator, scene: Scene, t: float,
                boxes: list, ring_points: int, clutter_points: int):
    """Ground and clutter points in the sensor frame, none inside a box:
    ``(xyz, intensity, ring)``."""
    ego2global = scene.ego.ego2global(t)
    lidar2ego = _transform(_rot_z(LIDAR_YAW), np.array(LIDAR_TRANSLATION))
    global2lidar = _rigid_inverse(ego2global @ lidar2ego)

    # Ground: one ring per beam that reaches the ground within 70 m.
    parts, intens, rings = [], [], []
    for ring_id, r in _ground_rings():
        n = ring_points
        az = rng.uniform(-np.pi, np.pi, size=n)
        rr = r * (1 + rng.normal(0, 0.01, size=n))
        pts = np.stack([
            rr * np.cos(az), rr * np.sin(az),
            -LIDAR_HEIGHT + rng.normal(0, 0.02, size=n)
        ], 1)
        parts.append(pts)
        intens.append(rng.uniform(2, 12, size=n))
        rings.append(np.full(n, ring_id, dtype=float))
    background = [np.concatenate(parts)]
    bg_int = [np.concatenate(intens)]
    bg_ring = [np.concatenate(rings)]

    # Clutter: walls and poles, sampled in the global frame.
    n_wall = clutter_points // 2
    sensor_global = (ego2global @ lidar2ego)[:3, 3]
    w = scene.walls[rng.integers(0, len(scene.walls), size=n_wall)]
    u = rng.uniform(0, 1, size=n_wall)
    wall_pts = np.stack([
        w[:, 0] + u * (w[:, 2] - w[:, 0]), w[:, 1] + u * (w[:, 3] - w[:, 1]),
        rng.uniform(0, 1, size=n_wall) * w[:, 4]
    ], 1)
    n_pole = clutter_points - n_wall if len(scene.poles) else 0
    p = scene.poles[rng.integers(0, max(len(scene.poles), 1), size=n_pole)]
    to_sensor = sensor_global[None, :2] - p[:, :2]
    ang = np.arctan2(to_sensor[:, 1], to_sensor[:, 0]) + rng.uniform(
        -1.2, 1.2, size=n_pole)
    pole_pts = np.stack([
        p[:, 0] + 0.15 * np.cos(ang), p[:, 1] + 0.15 * np.sin(ang),
        rng.uniform(0, 1, size=n_pole) * p[:, 2]
    ], 1)
    clutter = _apply(global2lidar, np.concatenate([wall_pts, pole_pts]))
    clutter = clutter[np.hypot(clutter[:, 0], clutter[:, 1]) < 70]
    background.append(clutter)
    bg_int.append(rng.uniform(10, 25, size=len(clutter)))
    bg_ring.append(_ring(clutter))

    bg = np.concatenate(background)
    bg_int = np.concatenate(bg_int)
    bg_ring = np.concatenate(bg_ring)
    if boxes:
        inside = points_in_boxes(bg, np.array([b[1] for b in boxes]),
                                 np.array([b[2] for b in boxes]) + 0.1,
                                 np.array([b[3] for b in boxes])).any(1)
        keep = ~inside
        bg, bg_int, bg_ring = bg[keep], bg_int[keep], bg_ring[keep]
    return bg, bg_int, bg_ring


def _dense_background(rng: np.random.Generator, scene: Scene, t: float,
                      boxes: list, cfg: SyntheticNuScenesConfig, scale: float,
                      wanted: int):
    """Exactly ``wanted`` background points at ``scale`` times the default
    density: drawn with a margin, then a random subset."""
    if wanted < 1:
        raise RuntimeError(
            f'render_lidar_frame: points_per_frame={cfg.points_per_frame} '
            'leaves no room for the ground next to the objects; raise it.')
    margin = 1.25
    while True:
        bg, bg_int, bg_ring = _background(
            rng, scene, t, boxes,
            int(np.ceil(cfg.ground_points_per_ring * scale * margin)),
            int(np.ceil(cfg.clutter_points * scale * margin)))
        if len(bg) >= wanted:
            break
        margin *= 1.5
    keep = np.sort(rng.choice(len(bg), wanted, replace=False))
    return bg[keep], bg_int[keep], bg_ring[keep]


def render_lidar_frame(rng: np.random.Generator, scene: Scene, t: float,
                       cfg: SyntheticNuScenesConfig,
                       keep_fraction: float) -> Tuple[np.ndarray, list]:
    """One LiDAR frame in the sensor frame, and the boxes present in it.

    With ``cfg.points_per_frame`` unset, the frame holds
    ``cfg.ground_points_per_ring`` points per ground ring,
    ``cfg.clutter_points`` wall and pole points and each object's points
    (see :func:`_box_point_count`), a random ``keep_fraction`` of them
    kept. With ``points_per_frame`` N, ``keep_fraction`` is not used and
    the frame holds exactly N points: each object ``s`` times its default
    count (at least 12), where ``s`` is N over this frame's default count,
    and the ground and clutter the rest.

    Returns:
        tuple: ``(points (N, 5) float32, [(object, centre, lwh, yaw), ...])``
        with boxes in the sensor frame.
    """
    ego2global = scene.ego.ego2global(t)
    lidar2ego = _transform(_rot_z(LIDAR_YAW), np.array(LIDAR_TRANSLATION))
    global2lidar = _rigid_inverse(ego2global @ lidar2ego)
    lidar_yaw_global = scene.ego.pose(t)[1] + LIDAR_YAW

    boxes = []
    for obj in scene.objects:
        if not scene.present(obj, t):
            continue
        c = _apply(global2lidar, obj.center(t)[None])[0]
        yaw = float(_wrap_angle(obj.yaw - lidar_yaw_global))
        lwh = obj.wlh[[1, 0, 2]]
        boxes.append((obj, c, lwh, yaw))
    counts = [
        _box_point_count(c, lwh, yaw, cfg.object_point_density)
        for _, c, lwh, yaw in boxes
    ]

    if cfg.points_per_frame is None:
        bg, bg_int, bg_ring = _background(rng, scene, t, boxes,
                                          cfg.ground_points_per_ring,
                                          cfg.clutter_points)
    else:
        default = len(_ground_rings()) * cfg.ground_points_per_ring + \
            cfg.clutter_points + sum(counts)
        scale = cfg.points_per_frame / default
        counts = [
            max(OBJECT_POINTS[0], int(round(n * scale))) if n else 0
            for n in counts
        ]
        bg, bg_int, bg_ring = _dense_background(
            rng, scene, t, boxes, cfg, scale,
            cfg.points_per_frame - sum(counts))

    obj_pts, obj_int = [], []
    for (obj, c, lwh, yaw), n in zip(boxes, counts):
        pts = _box_surface_points(rng, c, lwh, yaw, n)
        obj_pts.append(pts)
        obj_int.append(obj.intensity + rng.normal(0, 4, size=len(pts)))
    if obj_pts:
        opts = np.concatenate(obj_pts)
        xyz = np.concatenate([bg, opts])
        inten = np.concatenate([bg_int, np.concatenate(obj_int)])
        ring = np.concatenate([bg_ring, _ring(opts)])
    else:
        xyz, inten, ring = bg, bg_int, bg_ring
    points = np.concatenate(
        [xyz, np.clip(inten, 0, 255)[:, None], ring[:, None]], 1)
    if cfg.points_per_frame is None and keep_fraction < 1:
        points = points[rng.random(len(points)) < keep_fraction]
    return points.astype(np.float32), boxes


# ----------------------------------------------------------------------------
# Cameras
# ----------------------------------------------------------------------------
_CLASS_COLORS = {
    'car': (40, 40, 200),
    'truck': (40, 140, 220),
    'bus': (0, 200, 240),
    'trailer': (120, 80, 200),
    'construction_vehicle': (0, 120, 255),
    'pedestrian': (200, 60, 40),
    'motorcycle': (180, 40, 180),
    'bicycle': (220, 120, 220),
    'traffic_cone': (0, 90, 250),
    'barrier': (230, 230, 230)
}


def camera_calibrations(cfg: SyntheticNuScenesConfig):
    width, height = cfg.image_size
    scale = width / 1600.0
    calibs = []
    for name, trans, yaw, focal in CAMERAS:
        intrinsic = [[focal * scale, 0.0, width / 2.0],
                     [0.0, focal * scale, height / 2.0], [0.0, 0.0, 1.0]]
        rot = _rot_z(yaw) @ _CAM_AXES
        calibs.append((name, np.array(trans), rot, np.array(intrinsic)))
    return calibs


def render_camera_image(scene: Scene, t: float, cam_trans: np.ndarray,
                        cam_rot: np.ndarray, intrinsic: np.ndarray,
                        cfg: SyntheticNuScenesConfig, cam_index: int) -> bytes:
    width, height = cfg.image_size
    img = np.empty((height, width, 3), dtype=np.uint8)
    horizon = height // 2
    tint = 10 * cam_index
    img[:horizon] = (200 - tint // 2, 170, 120 + tint)  # sky (BGR)
    img[horizon:] = (90, 90, 90)  # road
    global2cam = _rigid_inverse(
        scene.ego.ego2global(t) @ _transform(cam_rot, cam_trans))
    drawn = []
    for obj in scene.objects:
        if not scene.present(obj, t):
            continue
        c = obj.center(t)
        w, l, h = obj.wlh
        x = np.array([1, 1, 1, 1, -1, -1, -1, -1]) * l / 2
        y = np.array([1, -1, -1, 1, 1, -1, -1, 1]) * w / 2
        z = np.array([1, 1, -1, -1, 1, 1, -1, -1]) * h / 2
        corners = np.stack([x, y, z], 1) @ _rot_z(obj.yaw).T + c
        cam = _apply(global2cam, corners)
        if (cam[:, 2] < 0.5).any():
            continue
        uv = cam @ intrinsic.T
        uv = uv[:, :2] / uv[:, 2:3]
        drawn.append((float(cam[:, 2].mean()), obj.name, uv))
    for _, name, uv in sorted(drawn, key=lambda d: -d[0]):
        hull = cv2.convexHull(np.round(uv * 16).astype(np.int32))
        cv2.fillConvexPoly(img, hull, _CLASS_COLORS[name], cv2.LINE_AA, 4)
    ok, buf = cv2.imencode('.jpg', img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    if not ok:
        raise RuntimeError('generate_synthetic_nuscenes: JPEG encoding '
                           'failed; check the OpenCV installation.')
    return buf.tobytes()
