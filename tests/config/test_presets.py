"""Presets compose onto model configs; values are validated at load."""
import argparse
import copy
import itertools
from pathlib import Path

import pytest
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from torch import nn

import projects.mmdet3d_plugin  # noqa: F401  registers BF16AmpOptimWrapper
from tests.helpers.precision_toys import collect_logs
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.cli.parsers import add_train_flags
from projects.mmdet3d_plugin.config.presets import (force_float32,
                                                    known_presets)
from tests.helpers.presets import apply_presets, apply_train_flags

REPO = Path(__file__).resolve().parents[2]
MMDET3D_CENTERPOINT = ('mmdet3d::centerpoint/centerpoint_pillar02_second_'
                       'secfpn_8xb4-cyclic-20e_nus-3d.py')
OUR_CONFIGS = sorted(
    str(p.relative_to(REPO)) for folder in ('centerpoint', 'voxelnet')
    for p in (REPO / 'configs' / folder).glob('*.py'))
MODEL_CONFIGS = [MMDET3D_CENTERPOINT] + OUR_CONFIGS

ACCUM = {None: None, 'grad_accum_x2': 2, 'grad_accum_x4': 4,
         'grad_accum_x8': 8}
PRECISION = {
    None: None,
    'fp16': ('AmpOptimWrapper', 'float16', 512.0),
    'fp16_dynamic': ('AmpOptimWrapper', 'float16', 'dynamic'),
    'bf16': ('BF16AmpOptimWrapper', 'bfloat16', None),
}


def _combos(both_orders: bool):
    for accum, precision in itertools.product(ACCUM, PRECISION):
        names = [n for n in (accum, precision) if n]
        yield names
        if both_orders and len(names) == 2:
            yield names[::-1]


CASES = [(MMDET3D_CENTERPOINT, names) for names in _combos(True)] + [
    (path, names) for path in OUR_CONFIGS for names in _combos(False)
]


def _fromfile(path: str, tmp_dir: Path) -> Config:
    if '::' in path:
        # A package config is inherited through `_base_` with its scope.
        child = tmp_dir / 'child.py'
        child.write_text(f'_base_ = [{path!r}]\n')
        return Config.fromfile(str(child))
    return Config.fromfile(str(REPO / path))


@pytest.fixture(scope='module')
def base_configs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('bases')
    return {path: _fromfile(path, tmp) for path in MODEL_CONFIGS}


def test_known_presets():
    assert known_presets() == [
        'activation_checkpointing', 'bf16', 'fast_pipeline', 'fp16',
        'fp16_dynamic', 'grad_accum_x2', 'grad_accum_x4', 'grad_accum_x8'
    ]
    for name in known_presets():
        text = (REPO / 'configs/_base_/presets' / f'{name}.py').read_text()
        assert text.startswith('#') and 'Use ' in text, \
            f'{name}.py must say in a comment when to use it'


@pytest.mark.parametrize('path, names', CASES,
                         ids=[f'{Path(p).stem[:24]}-{"+".join(n) or "none"}'
                              for p, n in CASES])
def test_preset_merge(base_configs, path, names):
    base = base_configs[path]
    cfg = copy.deepcopy(base)
    apply_presets(cfg, names)
    ow, base_ow = cfg.optim_wrapper, base.optim_wrapper

    # The base's optimizer, clipping and param-wise settings stay.
    for key in ('optimizer', 'clip_grad', 'paramwise_cfg', 'constructor'):
        assert ow.get(key) == base_ow.get(key), key
    # Nothing outside optim_wrapper changes.
    rest = {k: v for k, v in cfg.to_dict().items() if k != 'optim_wrapper'}
    assert rest == {
        k: v for k, v in base.to_dict().items() if k != 'optim_wrapper'
    }

    accum = next((ACCUM[n] for n in names if n in ACCUM), None)
    assert ow.get('accumulative_counts',
                  1) == (accum or base_ow.get('accumulative_counts', 1))
    precision = next((PRECISION[n] for n in names if n in PRECISION), None)
    if precision is None:
        assert ow.get('type') == base_ow.get('type')
        assert ow.get('loss_scale') == base_ow.get('loss_scale')
        assert ow.get('dtype') == base_ow.get('dtype')
    else:
        wrapper_type, dtype, loss_scale = precision
        assert ow.type == wrapper_type
        assert ow.dtype == dtype
        assert ow.get('loss_scale') == loss_scale
        if isinstance(loss_scale, float):
            assert type(ow.loss_scale) is float


@pytest.mark.parametrize('names', [[], ['grad_accum_x4'], ['bf16'],
                                   ['grad_accum_x8', 'bf16']])
def test_merged_wrapper_builds(base_configs, names):
    cfg = copy.deepcopy(base_configs[MMDET3D_CENTERPOINT])
    apply_presets(cfg, names)
    wrapper = build_optim_wrapper(nn.Linear(3, 2), cfg.optim_wrapper)
    assert wrapper.optimizer.defaults['lr'] == \
        cfg.optim_wrapper.optimizer.lr
    assert wrapper.clip_grad_kwargs['max_norm'] == 35


BASE_WITH_PARAMWISE = dict(
    optim_wrapper=dict(
        type='OptimWrapper',
        constructor='DefaultOptimWrapperConstructor',
        optimizer=dict(type='AdamW', lr=2e-4, weight_decay=0.01),
        paramwise_cfg=dict(custom_keys={'backbone': dict(lr_mult=0.1)}),
        clip_grad=dict(max_norm=10, norm_type=2)))


@pytest.mark.parametrize('names', [['fp16'], ['bf16'],
                                   ['grad_accum_x4', 'fp16_dynamic']])
def test_paramwise_and_clip_grad_kept(names):
    cfg = Config(copy.deepcopy(BASE_WITH_PARAMWISE))
    apply_presets(cfg, names)
    for key in ('constructor', 'optimizer', 'paramwise_cfg', 'clip_grad'):
        assert cfg.optim_wrapper[key] == BASE_WITH_PARAMWISE[
            'optim_wrapper'][key]


def test_precision_preset_replaces_base_precision():
    cfg = Config(
        dict(optim_wrapper=dict(
            type='AmpOptimWrapper', loss_scale=512., dtype='float16',
            accumulative_counts=2, optimizer=dict(type='SGD', lr=0.1))))
    apply_presets(cfg, ['bf16'])
    assert 'loss_scale' not in cfg.optim_wrapper
    assert cfg.optim_wrapper.dtype == 'bfloat16'
    assert cfg.optim_wrapper.accumulative_counts == 2
    apply_presets(cfg, ['grad_accum_x8'])
    assert cfg.optim_wrapper.type == 'BF16AmpOptimWrapper'
    assert cfg.optim_wrapper.accumulative_counts == 8


@pytest.mark.parametrize('names, match', [
    (['fp16', 'bf16'], r"\['fp16', 'bf16'\] both set the precision"),
    (['grad_accum_x2', 'grad_accum_x8'], 'both set the accumulation'),
    (['fp32'], r"unknown preset 'fp32'; known presets are "
     r"\['activation_checkpointing', 'bf16', 'fast_pipeline', 'fp16', "
     r"'fp16_dynamic', 'grad_accum_x2'"),
    ('grad_accum_x16', "unknown preset 'grad_accum_x16'"),
])
def test_bad_preset_lists(names, match):
    cfg = Config(copy.deepcopy(BASE_WITH_PARAMWISE))
    with pytest.raises(ValueError, match=match):
        apply_presets(cfg, names)


def test_presets_need_an_optim_wrapper():
    with pytest.raises(ValueError, match='the config has no `optim_wrapper`'):
        apply_presets(Config(dict(model=dict())), ['fp16'])


def _write(tmp_path: Path, text: str, name: str = 'cfg.py') -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


TOY = ("optim_wrapper = dict(type='OptimWrapper', "
       "optimizer=dict(type='SGD', lr=0.1))\n")


def test_load_config_applies_presets_and_logs(tmp_path):
    path = _write(
        tmp_path, f'_base_ = [{MMDET3D_CENTERPOINT!r}]\n'
        "presets = ['grad_accum_x4', 'fp16']\n")
    with collect_logs() as logs:
        cfg = load_config(path)
    assert 'presets' not in cfg
    assert cfg.runner_type == 'PluginRunner'
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    assert cfg.optim_wrapper.accumulative_counts == 4
    assert cfg.optim_wrapper.optimizer.type == 'AdamW'
    applied = [m for m in logs.messages if m.startswith('applied preset')]
    assert [m.split("'")[1] for m in applied] == ['grad_accum_x4', 'fp16']
    assert any('auto_scale_lr is off' in m for m in logs.messages)


def test_load_config_package_path():
    cfg = load_config(MMDET3D_CENTERPOINT)
    assert cfg.optim_wrapper.type == 'OptimWrapper'
    assert cfg.runner_type == 'PluginRunner'


def test_cfg_options_come_last(tmp_path):
    path = _write(tmp_path, TOY + "presets = ['grad_accum_x4']\n"
                  "runner_type = 'Runner'\n")
    cfg = load_config(
        path, cfg_options={'optim_wrapper.accumulative_counts': 2})
    assert cfg.optim_wrapper.accumulative_counts == 2
    assert cfg.runner_type == 'Runner'  # a config's own choice is kept


def test_presets_not_in_cfg_options(tmp_path):
    with pytest.raises(ValueError, match='presets cannot be set by '
                       '--cfg-options'):
        load_config(_write(tmp_path, TOY), cfg_options={'presets': ['fp16']})


@pytest.mark.parametrize('options, error, match', [
    ({'optim_wrapper.accumulative_counts': 0}, ValueError,
     r'accumulative_counts must be a positive integer \(1 = no '
     r'accumulation\), got 0\. Use a preset'),
    ({'optim_wrapper.accumulative_counts': -1}, ValueError, 'got -1'),
    ({'optim_wrapper.accumulative_counts': 2.5}, ValueError, 'got 2.5'),
    ({'optim_wrapper.accumulative_counts': True}, ValueError, 'got True'),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': 0}, ValueError,
     r"loss_scale must be positive, got 0; use a positive number .*"
     r"'dynamic'"),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': -512.}, ValueError, 'got -512.0'),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': 'foo'}, ValueError,
     r"loss_scale='foo' is not valid"),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': True}, TypeError, 'must be a number'),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': dict(scale=2.)}, ValueError,
     r"unknown GradScaler arguments \['scale'\]"),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.loss_scale': dict(init_scale=0)}, ValueError,
     'init_scale must be a positive number'),
    ({'optim_wrapper.loss_scale': 512.}, ValueError,
     "loss_scale is only used by AmpOptimWrapper \\(float16\\), but "
     "optim_wrapper.type is "
     "'OptimWrapper'"),
    ({'optim_wrapper.type': 'AmpOptimWrapper',
      'optim_wrapper.dtype': 'half'}, ValueError, 'dtype must be one of'),
])
def test_invalid_values_fail_at_load(tmp_path, options, error, match):
    with pytest.raises(error, match=match):
        load_config(_write(tmp_path, TOY), cfg_options=options)


@pytest.mark.parametrize('loss_scale, expected', [
    (512, 512.0),
    ('dynamic', 'dynamic'),
    (dict(init_scale=256, growth_interval=100),
     dict(init_scale=256.0, growth_interval=100)),
])
def test_loss_scale_accepted(tmp_path, loss_scale, expected):
    cfg = load_config(
        _write(tmp_path, TOY),
        cfg_options={'optim_wrapper.type': 'AmpOptimWrapper',
                     'optim_wrapper.loss_scale': loss_scale})
    assert cfg.optim_wrapper.loss_scale == expected
    assert isinstance(cfg.optim_wrapper.loss_scale, type(expected))
    if isinstance(expected, dict):
        assert type(cfg.optim_wrapper.loss_scale['init_scale']) is float


def test_bad_value_in_preset_file_names_the_preset(tmp_path):
    preset = _write(tmp_path, 'optim_wrapper = dict(accumulative_counts=0)\n',
                    'bad_accum.py')
    path = _write(tmp_path, TOY + f'presets = [{preset!r}]\n')
    with pytest.raises(ValueError, match=f"preset '{preset}'"):
        load_config(path)


@pytest.mark.parametrize('accum, amp, presets', [
    (4, None, ['grad_accum_x4']),
    (None, True, ['fp16_dynamic']),
    (None, 'fp16', ['fp16_dynamic']),
    (None, 'fp16-static', ['fp16']),
    (None, 'bf16', ['bf16']),
    (8, 'bf16', ['grad_accum_x8', 'bf16']),
    (2, 'fp16-static', ['grad_accum_x2', 'fp16']),
])
def test_train_flags_equal_presets(accum, amp, presets):
    by_flags = Config(copy.deepcopy(BASE_WITH_PARAMWISE))
    by_presets = Config(copy.deepcopy(BASE_WITH_PARAMWISE))
    apply_train_flags(by_flags, accum=accum, amp=amp)
    apply_presets(by_presets, presets)
    assert by_flags.to_dict() == by_presets.to_dict()


def test_accum_flag_takes_any_count():
    cfg = Config(copy.deepcopy(BASE_WITH_PARAMWISE))
    apply_train_flags(cfg, accum=3, amp=False)
    assert cfg.optim_wrapper.accumulative_counts == 3
    assert cfg.optim_wrapper.type == 'OptimWrapper'


@pytest.mark.parametrize('kwargs, match', [
    (dict(accum=0), r'--accum: expected a positive integer .* got 0'),
    (dict(accum=-2), 'got -2'),
    (dict(amp='fp8'), r"--amp: expected one of \['fp16', 'fp16-static', "
     r"'bf16', 'fp32'\]"),
])
def test_bad_train_flags(kwargs, match):
    with pytest.raises(ValueError, match=match):
        apply_train_flags(Config(copy.deepcopy(BASE_WITH_PARAMWISE)),
                          **kwargs)


@pytest.mark.parametrize('argv, accum, amp', [
    ([], None, None),
    (['--amp'], None, 'fp16'),
    (['--amp', 'bf16', '--accum', '4'], 4, 'bf16'),
    (['--amp', 'fp16-static'], None, 'fp16-static'),
    (['--amp', 'fp32', '--accum', '2'], 2, 'fp32'),
])
def test_add_train_flags(argv, accum, amp):
    parser = argparse.ArgumentParser()
    add_train_flags(parser)
    args = parser.parse_args(argv)
    assert (args.accum, args.amp) == (accum, amp)


def test_force_float32_on_an_optim_wrapper_copy():
    """The doctor trains in float32 with a dict holding only the wrapper:
    each autocast wrapper of several becomes OptimWrapper, a custom type
    is kept, and the config the copy came from is untouched."""
    sgd = dict(type='SGD', lr=0.1)
    cfg = Config(dict(optim_wrapper=dict(
        backbone=dict(type='AmpOptimWrapper', optimizer=sgd,
                      loss_scale='dynamic', accumulative_counts=2),
        head=dict(type='MyOptimWrapper', optimizer=sgd, dtype='bfloat16'))))
    copied = dict(optim_wrapper=copy.deepcopy(cfg.optim_wrapper))
    assert force_float32(copied, 'doctor model.train') is copied
    assert copied['optim_wrapper'] == dict(
        backbone=dict(type='OptimWrapper', optimizer=sgd,
                      accumulative_counts=2),
        head=dict(type='MyOptimWrapper', optimizer=sgd))
    assert cfg.optim_wrapper.backbone.type == 'AmpOptimWrapper'
