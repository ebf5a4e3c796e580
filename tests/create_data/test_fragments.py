"""``create_data/fragments.py``: an info file joined from fragments that
workers pickled separately loads as the whole dict pickled at once."""
import io
import pickle

import numpy as np

from projects.mmdet3d_plugin.create_data.fragments import (
    add_fragment, end_info_file, pickle_fragment, start_info_file)


def _records(count: int, seed: int) -> list:
    """Info-like records: repeated key strings, nested lists and dicts, a
    list shared by two keys, numpy values (so the fragments' memo slots
    pass 256, ``LONG_BINPUT``, and are read back by ``BINGET``)."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(count):
        matrix = rng.normal(size=(4, 4)).tolist()
        records.append(
            dict(
                sample_idx=i,
                token=f'token-{seed}-{i}',
                lidar_points=dict(lidar2ego=matrix, num_pts_feats=5),
                ego2global=matrix,  # the same list object, twice
                instances=[
                    dict(bbox_3d=rng.normal(size=7).tolist(),
                         bbox_label=int(rng.integers(10)),
                         num_lidar_pts=np.int64(rng.integers(100)),
                         bbox_3d_isvalid=np.bool_(True))
                    for _ in range(int(rng.integers(0, 6)))
                ],
                cam_instances={'CAM_FRONT': []}))
    return records


def test_joined_fragments_load_as_the_whole_dict():
    shards = [_records(n, seed) for seed, n in enumerate((70, 0, 1, 300))]
    metainfo = dict(categories={'car': 0, 'ignored': -1},
                    dataset='nuscenes', version='v1.0-mini',
                    info_version='1.1')
    whole = dict(metainfo=metainfo,
                 data_list=[r for shard in shards for r in shard])

    buffer = io.BytesIO()
    start_info_file(buffer, metainfo)
    for shard in shards:
        add_fragment(buffer, pickle_fragment(shard))
    end_info_file(buffer)
    loaded = pickle.loads(buffer.getvalue())

    assert list(loaded) == ['metainfo', 'data_list']
    assert loaded == whole
    assert len(loaded['data_list']) == 371
    # a shared object stays shared within its record, as pickled at once
    last = loaded['data_list'][-1]
    assert last['ego2global'] is last['lidar_points']['lidar2ego']
    instances = [i for r in loaded['data_list'] for i in r['instances']]
    assert instances and all(
        type(i['num_lidar_pts']) is np.int64 for i in instances)
