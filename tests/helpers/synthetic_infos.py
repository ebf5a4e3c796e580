"""Info files of nuScenes size without nuScenes, for memory benchmarks.

:func:`write_synthetic_infos` writes an mmdet3d 1.x nuScenes info file
(``{'metainfo': ..., 'data_list': [...]}``) whose infos have the fields and
sizes the official converter produces: six cameras with their transforms,
ten LiDAR sweeps with theirs, about 40 instances and their per-camera
projections. No point cloud or image files are written; use a pipeline that
only reads infos.
"""
import pickle
from typing import Optional

import numpy as np

CAMERAS = ('CAM_FRONT', 'CAM_FRONT_RIGHT', 'CAM_FRONT_LEFT', 'CAM_BACK',
           'CAM_BACK_LEFT', 'CAM_BACK_RIGHT')
CLASSES = ('car', 'truck', 'trailer', 'bus', 'construction_vehicle', 'bicycle',
           'motorcycle', 'pedestrian', 'traffic_cone', 'barrier')


def synthetic_info(rng: np.random.Generator,
                   index: int,
                   num_instances: Optional[int] = None) -> dict:
    """One info dict in the mmdet3d 1.x nuScenes format.

    Args:
        rng (np.random.Generator): Source of the values.
        index (int): ``sample_idx`` of the info.
        num_instances (int, optional): Number of instances; drawn around
            40 (the nuScenes mean) when None. Defaults to None.

    Returns:
        dict: The info.
    """
    timestamp = 1533151603547590 + index * 500000
    if num_instances is None:
        num_instances = int(rng.integers(10, 70))
    n_cam = num_instances // 6
    tokens = iter(
        rng.bytes(16 * 18).hex()[i:i + 32] for i in range(0, 16 * 18 * 2, 32))
    mats = iter(rng.normal(size=(1 + 6 * 2 + 1 + 10 * 3, 4, 4)).tolist())
    intrinsics = iter(rng.normal(size=(6, 3, 3)).tolist())
    boxes = rng.normal(size=(num_instances, 9))
    labels = rng.integers(0, len(CLASSES), size=num_instances).tolist()
    counts = rng.integers(0, 500, size=(num_instances, 2)).tolist()
    lidar_file = f'n015-2018-07-18-11-07-57+0800__LIDAR_TOP__{timestamp}'
    instances = [
        dict(bbox_3d=box[:7],
             bbox_label_3d=label,
             bbox_3d_isvalid=True,
             velocity=box[7:],
             num_lidar_pts=count[0] + 1,
             num_radar_pts=count[1] // 50)
        for box, label, count in zip(boxes.tolist(), labels, counts)
    ]
    cam_boxes = rng.normal(size=(6, n_cam, 15)).tolist()
    cam_ints = rng.integers(0, 9, size=(6, n_cam)).tolist()
    cam_instances = {
        cam: [
            dict(bbox_label=inst['bbox_label_3d'],
                 bbox_label_3d=inst['bbox_label_3d'],
                 bbox=values[:4],
                 bbox_3d_isvalid=True,
                 center_2d=values[4:6],
                 depth=values[6],
                 velocity=inst['velocity'],
                 attr_label=attr,
                 bbox_3d=values[8:15])
            for inst, values, attr in zip(instances, cam_boxes[c], cam_ints[c])
        ]
        for c, cam in enumerate(CAMERAS)
    }
    return dict(sample_idx=index,
                token=next(tokens),
                timestamp=timestamp / 1e6,
                ego2global=next(mats),
                images={
                    cam:
                    dict(img_path=f'{lidar_file}__{cam}.jpg',
                         cam2img=next(intrinsics),
                         sample_data_token=next(tokens),
                         timestamp=timestamp / 1e6,
                         cam2ego=next(mats),
                         lidar2cam=next(mats))
                    for cam in CAMERAS
                },
                lidar_points=dict(num_pts_feats=5,
                                  lidar_path=f'{lidar_file}.pcd.bin',
                                  lidar2ego=next(mats)),
                lidar_sweeps=[
                    dict(lidar_points=dict(
                        lidar_path=f'{lidar_file}_sweep{k}.pcd.bin',
                        lidar2ego=next(mats),
                        ego2global=next(mats),
                        lidar2sensor=next(mats)),
                         timestamp=(timestamp - 50000 * (k + 1)) / 1e6,
                         sample_data_token=next(tokens)) for k in range(10)
                ],
                instances=instances,
                cam_instances=cam_instances)


def write_synthetic_infos(path: str,
                          num_infos: int,
                          seed: int = 0,
                          num_instances: Optional[int] = None) -> str:
    """Write an info file of ``num_infos`` synthetic nuScenes infos.

    Args:
        path (str): Output ``.pkl`` path.
        num_infos (int): Number of infos (28,130 for nuScenes trainval).
        seed (int): Random seed. Defaults to 0.
        num_instances (int, optional): Instances per info; about 40 on
            average when None. Defaults to None.

    Returns:
        str: ``path``.
    """
    if num_infos < 1:
        raise ValueError(
            f'write_synthetic_infos: num_infos must be >= 1, got {num_infos}')
    rng = np.random.default_rng(seed)
    data_list = [
        synthetic_info(rng, i, num_instances) for i in range(num_infos)
    ]
    metainfo = dict(categories={
        name: i
        for i, name in enumerate(CLASSES)
    },
                    dataset='nuscenes',
                    version='v1.0-trainval',
                    info_version='1.1')
    with open(path, 'wb') as f:
        pickle.dump(dict(metainfo=metainfo, data_list=data_list),
                    f,
                    protocol=4)
    return path
