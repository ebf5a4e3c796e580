"""``redirect_data_root`` moves every dataset the Runner builds, wrapped or
concatenated, their evaluators and ObjectSample's ground-truth database."""
from mmengine.config import Config

from projects.mmdet3d_plugin.config.data_root import (redirect_data_root,
                                                      unwrap_datasets)

OLD = 'data/nuscenes/'


def _dataset(ann_file='nuscenes_infos_train.pkl', pipeline=()):
    return dict(type='SafeNuScenesDataset', data_root=OLD, ann_file=ann_file,
                pipeline=list(pipeline))


def _object_sample():
    return dict(type='ObjectSample', db_sampler=dict(
        data_root=OLD, info_path=OLD + 'nuscenes_dbinfos_train.pkl',
        rate=1.0))


def test_every_wrapped_and_concatenated_dataset_moves(tmp_path):
    root = str(tmp_path / 'synthetic')
    cfg = Config(dict(
        data_root=OLD,
        train_dataloader=dict(dataset=dict(
            type='CBGSDataset',
            dataset=dict(type='ConcatDataset', datasets=[
                _dataset(pipeline=[_object_sample()]),
                _dataset('nuscenes_infos_val.pkl'),
            ]))),
        val_dataloader=dict(dataset=_dataset('nuscenes_infos_val.pkl')),
        test_dataloader=None,
        val_evaluator=dict(type='SafeNuScenesMetric', data_root=OLD,
                           ann_file=OLD + 'nuscenes_infos_val.pkl'),
        test_evaluator=[dict(type='SafeNuScenesMetric',
                             ann_file=OLD + 'nuscenes_infos_val.pkl')]))

    redirect_data_root(cfg, root)

    new = root + '/'
    assert cfg.data_root == new
    train = list(unwrap_datasets(cfg.train_dataloader.dataset))
    assert [d['type'] for d in train] == [
        'CBGSDataset', 'ConcatDataset', 'SafeNuScenesDataset',
        'SafeNuScenesDataset'
    ]
    leaves = [d for d in train if 'ann_file' in d]
    assert [d['data_root'] for d in leaves] == [new, new]
    sampler = leaves[0]['pipeline'][0]['db_sampler']
    assert sampler['data_root'] == new
    assert sampler['info_path'] == new + 'nuscenes_dbinfos_train.pkl'
    assert cfg.val_dataloader.dataset.data_root == new
    assert cfg.val_evaluator.data_root == new
    assert cfg.val_evaluator.ann_file == new + 'nuscenes_infos_val.pkl'
    assert cfg.test_evaluator[0].ann_file == new + 'nuscenes_infos_val.pkl'
