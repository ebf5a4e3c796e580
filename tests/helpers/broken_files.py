"""Reading and breaking the generated data's files: the train infos by
``sample_idx``, the frames that read a point file, truncation mid-point."""
import pickle
from pathlib import Path


def train_infos(root: Path) -> dict:
    """``{sample_idx: info}`` of ``root``'s ``nuscenes_infos_train.pkl``."""
    infos = pickle.loads((root / 'nuscenes_infos_train.pkl').read_bytes())
    return {i['sample_idx']: i for i in infos['data_list']}


def owners(infos: dict, path: Path) -> set:
    """The tokens of the frames that read the point file ``path``: as
    their key frame or among their sweeps (a key frame is a sweep of the
    frames after it)."""
    return {info['token'] for info in infos.values() if path.name in [
        Path(s['lidar_points']['lidar_path']).name
        for s in [info] + info['lidar_sweeps']]}


def key_frame(root: Path, info: dict) -> Path:
    """The key-frame LiDAR file of ``info``."""
    return root / 'samples' / 'LIDAR_TOP' / info['lidar_points']['lidar_path']


def truncate(path: Path) -> None:
    """Cut a point file (5 float32 a point) in the middle of a point."""
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 40 * 20 + 8])
