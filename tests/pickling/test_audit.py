"""find_unpicklable, pickling errors of datasets, tools/check_pickle.py."""
import functools
import operator
import pickle
import runpy
import sys
import textwrap
from pathlib import Path

import pytest
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope
from nuscenes.eval.detection.config import config_factory

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from projects.mmdet3d_plugin.datasets.safe_nuscenes_dataset import (
    SafeNuScenesDataset)
from tests.helpers.synthetic_infos import write_synthetic_infos
from projects.mmdet3d_plugin.pickling.audit import find_unpicklable

REPO = Path(__file__).resolve().parents[2]
PREFIX = dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP')
INFO_PIPELINE = [
    dict(type='LoadAnnotations3D', with_bbox_3d=True, with_label_3d=True),
    dict(type='Pack3DDetInputs', keys=['gt_bboxes_3d', 'gt_labels_3d']),
]


class _Holder:
    pass


class _Slotted:
    __slots__ = ('fine', 'bad')


class _CustomState:

    def __init__(self):
        self.hidden = lambda: 0  # dropped by __getstate__
        self.shown = {'x': 1}.values()

    def __getstate__(self):
        return {'shown': self.shown}


class _FnTransform:
    """A pipeline step holding a lambda, as users write them."""

    def __init__(self):
        self.fn = lambda results: results

    def __call__(self, results):
        return self.fn(results)


def _nested_config():
    h = _Holder()
    h.eval_detection_configs = config_factory('detection_cvpr_2019')
    h.fine = [1, 2, 3]
    return h


def _lambda_in_pipeline():
    h = _Holder()
    h.pipeline = Compose([operator.itemgetter('a'), _FnTransform()])
    return h


def _dict_item():
    return {'outer': {'inner': [0, 1, lambda: 2]}}


def _slots():
    s = _Slotted()
    s.fine = 1
    s.bad = {'a': 1}.items()
    return s


def _partial_arg():
    h = _Holder()
    h.hook = functools.partial(print, 'ok', sep=lambda: 0)
    return h


def _custom_state():
    h = _Holder()
    h.child = _CustomState()
    return h


@pytest.mark.parametrize('build,path,type_name,error', [
    (_nested_config, 'eval_detection_configs.class_names', 'dict_keys',
     "cannot pickle 'dict_keys'"),
    (_lambda_in_pipeline, 'pipeline.transforms[1].fn',
     'function _FnTransform.__init__.<locals>.<lambda>', 'local object'),
    (_dict_item, "['outer']['inner'][2]", 'function _dict_item.<locals>',
     'local object'),
    (_slots, 'bad', 'dict_items', "cannot pickle 'dict_items'"),
    (_partial_arg, "hook.keywords['sep']", 'function _partial_arg.<locals>',
     'local object'),
    (_custom_state, 'child.shown', 'dict_values',
     "cannot pickle 'dict_values'"),
])
def test_audit_names_the_deepest_path(build, path, type_name, error):
    found = find_unpicklable(build())
    assert len(found) == 1, found
    assert found[0].startswith(f'{path} ({type_name}')
    assert error in found[0]


def test_audit_reports_each_offender_once_and_not_ancestors():
    h = _nested_config()
    h.pipeline = _lambda_in_pipeline().pipeline
    h.alias = h.eval_detection_configs  # same object, second path
    found = find_unpicklable(h)
    paths = sorted(line.split(' (')[0] for line in found)
    assert paths in ([
        'eval_detection_configs.class_names', 'pipeline.transforms[1].fn'
    ], ['alias.class_names', 'pipeline.transforms[1].fn'])


def test_audit_of_picklable_object_is_empty():
    assert find_unpicklable({'a': [1, 2.0, 'x', None], 'b': (b'y', )}) == []


def test_audit_stops_at_max_depth():
    found = find_unpicklable(_nested_config(), max_depth=1)
    assert len(found) == 1
    assert found[0].startswith('eval_detection_configs (DetectionConfig)')
    assert 'max_depth=1 reached' in found[0]


def test_audit_stops_at_time_limit():
    found = find_unpicklable(_nested_config(), time_limit=1e-9)
    assert len(found) == 1
    assert 'time limit reached' in found[0]


@pytest.mark.parametrize('kwargs,match', [
    (dict(max_depth=-1), 'max_depth must be >= 0'),
    (dict(time_limit=0), 'time_limit must be > 0'),
])
def test_audit_rejects_bad_bounds(kwargs, match):
    with pytest.raises(ValueError, match=match):
        find_unpicklable(object(), **kwargs)


@pytest.fixture(scope='module')
def info_file(tmp_path_factory):
    path = tmp_path_factory.mktemp('infos') / 'infos.pkl'
    return str(write_synthetic_infos(str(path), 4, seed=1))


def _dataset(info_file, pipeline=INFO_PIPELINE, cls=SafeNuScenesDataset):
    init_default_scope('mmdet3d')
    return cls(data_root='',
               ann_file=info_file,
               pipeline=pipeline,
               data_prefix=PREFIX)


def test_dataset_error_names_lambda_in_pipeline(info_file):
    dataset = _dataset(info_file, INFO_PIPELINE + [_FnTransform()])
    with pytest.raises(
            TypeError,
            match=r"^SafeNuScenesDataset: cannot pickle attribute "
            r"'pipeline\.transforms\[2\]\.fn' \(function "
            r'_FnTransform\.__init__\.<locals>\.<lambda>\): .*; fix: define '
            r'it at module level'):
        pickle.dumps(dataset)


def test_dataset_error_names_nested_offender(info_file):
    dataset = _dataset(info_file)
    dataset.extra = {'readers': [_Holder()]}
    dataset.extra['readers'][0].handle = open(info_file, 'rb')
    try:
        with pytest.raises(
                TypeError,
                match=r"cannot pickle attribute 'extra\['readers'\]\[0\]"
                r"\.handle' \(BufferedReader\).*fix: open or create it "
                'lazily inside the worker'):
            pickle.dumps(dataset)
    finally:
        dataset.extra['readers'][0].handle.close()


def test_dataset_audit_accepts_what_it_converts(info_file):
    # Devkit configs and dict views are converted, so the audit of a
    # dataset holding them must not name them, only the real offender.
    dataset = _dataset(info_file)
    dataset.devkit_cfg = config_factory('detection_cvpr_2019')
    dataset.names = dataset.devkit_cfg.class_range.keys()
    dataset.bad = lambda: 0
    with pytest.raises(TypeError) as info:
        pickle.dumps(dataset)
    assert "cannot pickle attribute 'bad'" in str(info.value)
    assert 'class_names' not in str(info.value)
    assert "'names'" not in str(info.value)


_BAD_MODULE = '''
from mmcv.transforms import BaseTransform
from mmdet3d.registry import TRANSFORMS


@TRANSFORMS.register_module()
class HoldsLambda(BaseTransform):

    def __init__(self):
        self.fn = lambda results: results

    def transform(self, results):
        return self.fn(results)
'''


def _write_config(tmp_path, info_file, extra_step=None):
    pipeline = INFO_PIPELINE + ([extra_step] if extra_step else [])
    cfg = tmp_path / 'cfg.py'
    cfg.write_text(
        textwrap.dedent(f"""
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin', 'bad_transform'],
            allow_failed_imports=False)
        default_scope = 'mmdet3d'
        train_dataloader = dict(dataset=dict(
            type='NuScenesDataset', data_root='', data_prefix={PREFIX!r},
            ann_file={info_file!r}, pipeline={pipeline!r}))
        """))
    (tmp_path / 'bad_transform.py').write_text(_BAD_MODULE)
    return cfg


def _run_tool(tmp_path, info_file, extra_step, monkeypatch, *extra_args):
    """Run tools/check_pickle.py's main() here; returns its exit code."""
    cfg = _write_config(tmp_path, info_file, extra_step)
    monkeypatch.syspath_prepend(str(tmp_path))  # for custom_imports
    tool = runpy.run_path(str(REPO / 'tools' / 'check_pickle.py'))
    monkeypatch.setattr(sys, 'argv', [
        'check_pickle.py',
        str(cfg), '--split', 'train', '--cfg-options',
        'train_dataloader.dataset.type=SafeNuScenesDataset', *extra_args
    ])
    return tool['main']()


@pytest.mark.launch  # spawn workers: fresh interpreters
def test_check_pickle_tool_passes_and_loads_in_spawn(
        tmp_path, info_file, monkeypatch, capsys):
    assert _run_tool(tmp_path, info_file, None, monkeypatch) == 0
    out = capsys.readouterr().out
    for text in ('SafeNuScenesDataset: pickled for a spawn worker',
                 'pickled size :', 'unpickle time:', 'OK'):
        assert text in out, out


def test_check_pickle_tool_names_offender_and_fails(
        tmp_path, info_file, monkeypatch, capsys):
    code = _run_tool(tmp_path, info_file, dict(type='HoldsLambda'),
                     monkeypatch, '--no-load')
    assert code == 1
    out = capsys.readouterr().out
    assert ('  cannot pickle:\n    pipeline.transforms[2].fn (function '
            'HoldsLambda.__init__.<locals>.<lambda>)') in out, out
    assert out.rstrip().endswith('FAILED')


def test_check_pickle_tool_rejects_missing_split(tmp_path, info_file):
    from projects.mmdet3d_plugin.datasets.builder import build_split_dataset
    from mmengine.config import Config
    cfg = Config(dict(train_dataloader=dict(dataset=dict())))
    with pytest.raises(ValueError, match='no val_dataloader.dataset'):
        build_split_dataset(cfg, 'val')
