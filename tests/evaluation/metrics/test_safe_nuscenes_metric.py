"""SafeNuScenesMetric: pickling, the stock metric's result file and the
devkit's own evaluation results, with both backends."""
import copy
import json
import math
import pickle

import pytest
import torch
from mmengine.logging import MMLogger
from mmengine.registry import init_default_scope
from nuscenes.eval.detection.config import config_factory

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from mmdet3d.evaluation.metrics import NuScenesMetric
from mmdet3d.registry import METRICS
from mmdet3d.structures import LiDARInstance3DBoxes
from projects.mmdet3d_plugin.compat.nuscenes_class_names import (
    PicklableDetectionConfig)
from projects.mmdet3d_plugin.datasets.safe_nuscenes_dataset import (
    SafeNuScenesDataset)
from projects.mmdet3d_plugin.evaluation.metrics.safe_nuscenes_metric import (
    BACKENDS, SafeNuScenesMetric)

PREFIX = dict(pts='samples/LIDAR_TOP', img='', sweeps='sweeps/LIDAR_TOP')


def _metric(cls, root='data/nuscenes', **kwargs):
    return cls(data_root=str(root),
               ann_file=f'{root}/nuscenes_infos_val.pkl',
               metric='bbox',
               **kwargs)


@pytest.mark.parametrize('copier', [
    copy.deepcopy,
    lambda m: pickle.loads(pickle.dumps(m)),
],
                         ids=['deepcopy', 'pickle'])
def test_metric_copies_with_equal_config(copier):
    metric = _metric(SafeNuScenesMetric)
    copied = copier(metric)
    devkit = config_factory('detection_cvpr_2019')
    cfg = copied.eval_detection_configs
    assert type(cfg) is PicklableDetectionConfig
    assert isinstance(cfg.class_names, list)
    assert cfg == devkit and devkit == cfg
    assert cfg.serialize() == devkit.serialize()
    assert copied.data_root == metric.data_root
    assert copied.ann_file == metric.ann_file


@pytest.mark.parametrize('copier', [
    copy.deepcopy,
    lambda m: pickle.loads(pickle.dumps(m)),
],
                         ids=['deepcopy', 'pickle'])
def test_stock_metric_cannot_be_copied(copier):
    # What SafeNuScenesMetric fixes; proves the test above can fail.
    with pytest.raises(TypeError, match="cannot pickle 'dict_keys' object"):
        copier(_metric(NuScenesMetric))


def test_metric_is_registered_and_builds_from_config():
    init_default_scope('mmdet3d')
    metric = METRICS.build(
        dict(type='SafeNuScenesMetric', data_root='x', ann_file='x/a.pkl'))
    assert type(metric) is SafeNuScenesMetric


def test_metric_subclass_holding_devkit_config_still_pickles():
    metric = _metric(SafeNuScenesMetric)
    metric.eval_detection_configs = config_factory('detection_cvpr_2019')
    loaded = pickle.loads(pickle.dumps(metric))
    assert loaded.eval_detection_configs == metric.eval_detection_configs
    metric.broken = lambda: None
    with pytest.raises(
            TypeError,
            match=r"^SafeNuScenesMetric: cannot pickle attribute 'broken' "
            r'\(function .*<lambda>\)'):
        copy.deepcopy(metric)


def _gt_as_predictions(root):
    """Ground-truth boxes of the val split, as a detector would output."""
    init_default_scope('mmdet3d')
    dataset = SafeNuScenesDataset(data_root=str(root),
                                  ann_file='nuscenes_infos_val.pkl',
                                  data_prefix=PREFIX,
                                  pipeline=[],
                                  metainfo=dict(version='v1.0-mini'),
                                  test_mode=True)
    samples = []
    for idx in range(len(dataset)):
        ann = dataset.get_data_info(idx)['eval_ann_info']
        boxes = ann['gt_bboxes_3d']
        labels = torch.as_tensor(ann['gt_labels_3d'])
        samples.append(
            dict(sample_idx=idx,
                 pred_instances_3d=dict(bboxes_3d=boxes,
                                        scores_3d=torch.linspace(
                                            1.0, 0.5, len(labels)),
                                        labels_3d=labels),
                 pred_instances=dict()))
    return dataset, samples


def test_metric_equals_stock_metric_on_val_split(nus_synthetic, tmp_path):
    dataset, samples = _gt_as_predictions(nus_synthetic)
    assert len(samples) == 20 and sum(
        len(s['pred_instances_3d']['labels_3d']) for s in samples) > 0
    results = {}
    for cls in (NuScenesMetric, SafeNuScenesMetric):
        metric = _metric(cls,
                         nus_synthetic,
                         jsonfile_prefix=str(tmp_path / cls.__name__))
        metric.dataset_meta = dataset.metainfo
        metric.process({}, copy.deepcopy(samples))
        results[cls] = metric.compute_metrics(metric.results)
    stock, ours = results[NuScenesMetric], results[SafeNuScenesMetric]
    assert ours.keys() == stock.keys()
    for key, value in stock.items():  # nan where the devkit reports nan
        assert ours[key] == value or (math.isnan(ours[key])
                                      and math.isnan(value)), key
    # Ground truth scored against itself: a non-trivial, near-perfect result.
    assert stock['pred_instances_3d_NuScenes/mAP'] > 0.9
    assert stock['pred_instances_3d_NuScenes/NDS'] > 0.8


def _without_boxes(samples):
    empty = copy.deepcopy(samples)
    for sample in empty:
        pred = sample['pred_instances_3d']
        keep = torch.zeros(len(pred['labels_3d']), dtype=torch.bool)
        sample['pred_instances_3d'] = dict(
            bboxes_3d=pred['bboxes_3d'][keep],
            scores_3d=pred['scores_3d'][keep],
            labels_3d=pred['labels_3d'][keep])
    return empty


def test_no_predicted_box_scores_zero_instead_of_crashing(
        nus_synthetic, tmp_path, caplog):
    logger = MMLogger.get_current_instance()  # does not propagate to root
    logger.addHandler(caplog.handler)
    try:
        _check_no_predicted_box(nus_synthetic, tmp_path)
    finally:
        logger.removeHandler(caplog.handler)
    assert 'predicted no box in any of the 20 samples' in caplog.text


def _check_no_predicted_box(nus_synthetic, tmp_path):
    dataset, samples = _gt_as_predictions(nus_synthetic)
    for cls in (NuScenesMetric, SafeNuScenesMetric):
        metric = _metric(cls, nus_synthetic,
                         jsonfile_prefix=str(tmp_path / cls.__name__))
        metric.dataset_meta = dataset.metainfo
        metric.process({}, _without_boxes(samples))
        if cls is NuScenesMetric:  # what the override fixes
            with pytest.raises(Exception, match='Invalid box type: None'):
                metric.compute_metrics(metric.results)
            continue
        ours = metric.compute_metrics(metric.results)
    full = _metric(SafeNuScenesMetric, nus_synthetic,
                   jsonfile_prefix=str(tmp_path / 'full'))
    full.dataset_meta = dataset.metainfo
    full.process({}, copy.deepcopy(samples))
    reference = full.compute_metrics(full.results)
    assert ours.keys() == reference.keys()
    prefix = 'pred_instances_3d_NuScenes'
    assert ours[f'{prefix}/mAP'] == 0 and ours[f'{prefix}/NDS'] == 0
    assert ours[f'{prefix}/car_AP_dist_2.0'] == 0
    assert ours[f'{prefix}/car_trans_err'] == 1
    assert math.isnan(ours[f'{prefix}/traffic_cone_vel_err'])


def _random_lidar_predictions(samples, seed=0):
    """Random 9-value LiDAR boxes: some beyond the class ranges, speeds on
    both sides of the 0.2 m/s attribute rule, every class."""
    gen = torch.Generator().manual_seed(seed)
    out = copy.deepcopy(samples)
    for sample in out:
        n = 120
        xyz = torch.rand(n, 3, generator=gen) * torch.tensor([130., 130., 3.])
        xyz -= torch.tensor([65., 65., 2.])
        dims = 0.3 + 4 * torch.rand(n, 3, generator=gen)
        yaw = 8 * torch.rand(n, 1, generator=gen) - 4
        vel = torch.randn(n, 2, generator=gen) * 0.3
        boxes = LiDARInstance3DBoxes(torch.cat([xyz, dims, yaw, vel], 1),
                                     box_dim=9)
        sample['pred_instances_3d'] = dict(
            bboxes_3d=boxes,
            scores_3d=torch.rand(n, generator=gen),
            labels_3d=torch.randint(0, 10, (n, ), generator=gen))
    return out


def _flat(results):
    for token, boxes in results.items():
        for box in boxes:
            yield token, box


def test_result_file_equals_stock_metric_file(nus_synthetic, tmp_path):
    dataset, samples = _gt_as_predictions(nus_synthetic)
    predictions = _random_lidar_predictions(samples)
    files, metrics = {}, {}
    for cls in (NuScenesMetric, SafeNuScenesMetric):
        metric = _metric(cls, nus_synthetic,
                         jsonfile_prefix=str(tmp_path / cls.__name__))
        metric.dataset_meta = dataset.metainfo
        metric.process({}, copy.deepcopy(predictions))
        metrics[cls] = metric.compute_metrics(metric.results)
        with open(tmp_path / cls.__name__ / 'pred_instances_3d' /
                  'results_nusc.json') as f:
            files[cls] = json.load(f)
    stock, ours = files[NuScenesMetric], files[SafeNuScenesMetric]
    assert ours['meta'] == stock['meta']
    assert list(ours['results']) == list(stock['results'])  # sample order
    pairs = list(zip(_flat(ours['results']), _flat(stock['results'])))
    assert len(pairs) == sum(map(len, stock["results"].values())) > 500
    assert len(pairs) < 20 * 120  # the range filter dropped some
    attrs = set()
    for (token, a), (stock_token, b) in pairs:
        assert token == stock_token and list(a) == list(b)
        for key, value in b.items():
            if isinstance(value, (list, float)):
                assert a[key] == pytest.approx(value, abs=1e-6, rel=0), key
            else:
                assert a[key] == value, key
        attrs.add(b['attribute_name'])
    assert len(attrs) >= 6
    ours, theirs = metrics[SafeNuScenesMetric], metrics[NuScenesMetric]
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-6, nan_ok=True), key
    assert (tmp_path / 'SafeNuScenesMetric' / 'pred_instances_3d' /
            'metrics_details.json').exists()


def test_devkit_backend_equals_fast_backend(nus_synthetic, tmp_path):
    dataset, samples = _gt_as_predictions(nus_synthetic)
    results = {}
    for backend in BACKENDS:
        metric = _metric(SafeNuScenesMetric, nus_synthetic, backend=backend,
                         prefix=backend)
        metric.dataset_meta = dataset.metainfo
        metric.process({}, copy.deepcopy(samples))
        # evaluate(): gathers (and moves to CPU) what process() kept.
        results[backend] = {
            key.split('/', 1)[1]: value
            for key, value in metric.evaluate(len(samples)).items()
        }
    fast, devkit = results['fast'], results['devkit']
    assert fast.keys() == devkit.keys()
    for key, value in devkit.items():
        assert fast[key] == pytest.approx(value, abs=1e-6, nan_ok=True), key


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError,
                       match=r"backend must be one of \('fast', 'devkit'\), "
                       r"got 'nccl'"):
        _metric(SafeNuScenesMetric, backend='nccl')


def test_format_only_writes_the_result_file(nus_synthetic, tmp_path):
    dataset, samples = _gt_as_predictions(nus_synthetic)
    metric = _metric(SafeNuScenesMetric, nus_synthetic, format_only=True,
                     jsonfile_prefix=str(tmp_path))
    metric.dataset_meta = dataset.metainfo
    metric.process({}, copy.deepcopy(samples))
    copied = pickle.loads(pickle.dumps(metric))  # after process, too
    assert copied._frames is None and len(copied.results) == 20
    assert metric.compute_metrics(metric.results) == {}
    with open(tmp_path / 'pred_instances_3d' / 'results_nusc.json') as f:
        written = json.load(f)
    assert len(written['results']) == 20
    assert not (tmp_path / 'pred_instances_3d' /
                'metrics_summary.json').exists()
