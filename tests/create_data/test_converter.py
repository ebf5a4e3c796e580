"""``tools/create_data.py``'s preparation (``create_data.prepare``, whose
products equal mmdet3d's converter's: tests/create_data/test_prepare.py),
through the script in a process forked from this one (the preparation is
the subject, not the script's start-up), on the generated dataset."""
import pickle

import numpy as np

from projects.mmdet3d_plugin.synthetic.scene import DETECTION_CLASSES
from tests.helpers.synthetic_data import tree_digest
from tests.helpers.train_tool import fork_tool


def test_create_data_tool_writes_mmdet3d_infos(nus_synthetic, tmp_path):
    before = tree_digest(nus_synthetic, skip=())
    tool = fork_tool(  # library: the preparation, through the script
        'create_data', 'nuscenes', '--root-path', nus_synthetic,
        '--out-dir', tmp_path, '--extra-tag', 'nuscenes', '--version',
        'v1.0-mini', '--max-sweeps', '10', '--no-gt-database')
    output, _ = tool.communicate(timeout=600)
    assert tool.returncode == 0, output[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'nuscenes_infos_train.pkl', 'nuscenes_infos_val.pkl'
    ]
    assert tree_digest(nus_synthetic, skip=()) == before  # root untouched

    expected_len = {'train': 80, 'val': 20}
    for split in ('train', 'val'):
        data = pickle.loads(
            (tmp_path / f'nuscenes_infos_{split}.pkl').read_bytes())
        assert data['metainfo']['info_version'] == '1.1'
        assert set(data['metainfo']['categories']) == set(DETECTION_CLASSES)
        assert len(data['data_list']) == expected_len[split]
        labels = {
            inst['bbox_label_3d']
            for info in data['data_list']
            for inst in info['instances']
        }
        assert labels == set(range(10))
        for info in data['data_list']:
            assert len(info['lidar_sweeps']) == 10
            assert len(info['images']) == 6
            assert all(inst['bbox_3d_isvalid'] for inst in info['instances'])
            assert not np.isnan([i['velocity']
                                 for i in info['instances']]).any()
        # Same preparation, same input: the fixture's infos are identical.
        assert (tmp_path / f'nuscenes_infos_{split}.pkl').read_bytes() == \
            (nus_synthetic / f'nuscenes_infos_{split}.pkl').read_bytes()


def test_ground_truth_database_holds_object_points(nus_synthetic):
    db = pickle.loads(
        (nus_synthetic / 'nuscenes_dbinfos_train.pkl').read_bytes())
    assert set(db) == set(DETECTION_CLASSES)
    for name, entries in db.items():
        assert all(e['num_points_in_gt'] > 0 for e in entries), name
        pts = np.fromfile(nus_synthetic / entries[0]['path'], dtype=np.float32)
        assert pts.size == 5 * entries[0]['num_points_in_gt']
