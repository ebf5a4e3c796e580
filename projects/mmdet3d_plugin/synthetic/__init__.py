"""The generated nuScenes data: simulated drives (``scene``), their sensor
data (``render``), the fixed tables and each version's scene names
(``tables``), the nuScenes tables and files (``writer``) and mmdet3d's
own converter run on them (``converter``)."""
from .converter import (create_nuscenes_infos, info_paths,
                        load_mmdet3d_converter, mmdet3d_converter_dir)
from .scene import DETECTION_CLASSES, SyntheticNuScenesConfig
from .tables import SUPPORTED_VERSIONS, version_scene_names
from .writer import generate_synthetic_nuscenes, prepare_synthetic_nuscenes

__all__ = [
    'DETECTION_CLASSES', 'SUPPORTED_VERSIONS', 'SyntheticNuScenesConfig',
    'create_nuscenes_infos', 'generate_synthetic_nuscenes', 'info_paths',
    'load_mmdet3d_converter', 'mmdet3d_converter_dir',
    'prepare_synthetic_nuscenes', 'version_scene_names'
]
