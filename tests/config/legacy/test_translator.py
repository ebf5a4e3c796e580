"""mmdet3d 0.x (mmcv 1.x) keys translated to mmengine keys."""
import math
import runpy
from pathlib import Path

import pytest
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

import projects.mmdet3d_plugin  # noqa: F401  registers PluginRunner
from tests.helpers.gpu import requires_cuda, requires_no_cuda
from mmdet3d.registry import DATASETS, HOOKS, RUNNERS
from tests.helpers.precision_toys import collect_logs, parameters_of, toy_cfg
from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.cli.runner_setup import isolate_runner
from projects.mmdet3d_plugin.constants import CPU_BF16_ENV
from projects.mmdet3d_plugin.engine.amp import check_amp_supported
from projects.mmdet3d_plugin.config.legacy.translator import (
    format_migration_table, translate_legacy)
from projects.mmdet3d_plugin.config.legacy.translator import LEGACY_KEYS
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from tests.helpers.upstream_configs import mmdet3d_0x_configs

REPO = Path(__file__).resolve().parents[3]
MMDET3D_CENTERPOINT = ('mmdet3d::centerpoint/centerpoint_pillar02_second_'
                       'secfpn_8xb4-cyclic-20e_nus-3d.py')

# The snippets users copy from mmdet3d 0.x posts, verbatim.
SNIPPET_ACCUM = (
    "optimizer_config = dict(type='GradientCumulativeOptimizerHook', "
    'cumulative_iters=4)\n')
SNIPPET_FP16 = 'fp16 = dict(loss_scale=512.)\n'

# mmdet3d 0.x's own files, read from its source package (upstream_configs).
CYCLIC_20E = '_base_/schedules/cyclic_20e.py'
SCHEDULE_2X = '_base_/schedules/schedule_2x.py'
DEFAULT_RUNTIME = '_base_/default_runtime.py'
PILLAR02_0X = ('centerpoint/centerpoint_02pillar_second_secfpn_4x8_cyclic_'
               '20e_nus.py')


def upstream(path: str) -> str:
    """The text of mmdet3d 0.x's ``configs/<path>``."""
    return (mmdet3d_0x_configs() / path).read_text()


def _write(tmp_path: Path, text: str, name: str = 'cfg.py') -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _translate(text: str, tmp_path: Path):
    return translate_legacy(Config.fromfile(_write(tmp_path, text)))


# ------------------------------------------------------------ references
# mmcv 1.x lr_updater.py / momentum_updater.py, transcribed.
def _annealing_cos(start, end, factor):
    return end + 0.5 * (start - end) * (math.cos(math.pi * factor) + 1)


def mmcv_cyclic(base, cur_iter, max_iters, target_ratio, step_ratio_up):
    """CyclicLrUpdaterHook / CyclicMomentumUpdaterHook, one cycle."""
    up = int(step_ratio_up * max_iters)
    for start, end, start_ratio, end_ratio in (
            (0, up, 1, target_ratio[0]),
            (up, max_iters, target_ratio[0], target_ratio[1])):
        if start <= cur_iter < end:
            return _annealing_cos(base * start_ratio, base * end_ratio,
                                  (cur_iter - start) / (end - start))
    raise AssertionError(cur_iter)


def mmcv_step_warmup(base, epoch, cur_iter, steps, gamma, warmup_iters,
                     warmup_ratio):
    """StepLrUpdaterHook (by epoch) with linear warmup (by iteration)."""
    exp = len(steps)
    for i, step in enumerate(steps):
        if epoch < step:
            exp = i
            break
    regular = base * gamma**exp
    if cur_iter < warmup_iters:
        k = (1 - cur_iter / warmup_iters) * (1 - warmup_ratio)
        return regular * (1 - k)
    return regular


@HOOKS.register_module()
class RecordLRHook(Hook):
    """Record (iter, epoch, lr, momentum) at the start of every iteration."""

    priority = 'LOWEST'

    def __init__(self) -> None:
        self.records = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        group = runner.optim_wrapper.optimizer.param_groups[0]
        momentum = group['betas'][0] if 'betas' in group else group.get(
            'momentum')
        self.records.append((runner.iter, runner.epoch, group['lr'],
                             momentum))


def _toy_0x(text: str, epochs_or_iters: str, epoch_len: int = 10) -> str:
    """A 0.x config training ToyRegressor; ``text`` holds the schedule."""
    return f"""
model = dict(type='ToyRegressor')
data = dict(
    samples_per_gpu=2,
    workers_per_gpu=0,
    train=dict(type='ToyRegressionDataset', size={2 * epoch_len}))
{text}
{epochs_or_iters}
checkpoint_config = dict(interval=-1)
log_config = dict(interval=1, hooks=[dict(type='TextLoggerHook')])
custom_hooks = [dict(type='RecordLRHook')]
seed = 0
"""


def _train_records(path: str):
    cfg = load_config(path)
    cfg.work_dir = str(Path(path).parent / 'work')
    isolate_runner(cfg, Path(path).stem)
    runner = RUNNERS.build(cfg)
    runner.train()
    hook = next(h for h in runner.hooks if isinstance(h, RecordLRHook))
    return cfg, hook.records


@pytest.mark.parametrize('max_epochs', [10, 7])
def test_cyclic_follows_mmcv(tmp_path, max_epochs):
    epoch_len = 10
    path = _write(
        tmp_path,
        _toy_0x(upstream(CYCLIC_20E),
                f"runner = dict(type='EpochBasedRunner', "
                f'max_epochs={max_epochs})', epoch_len))
    cfg, records = _train_records(path)
    assert [s['type'] for s in cfg.param_scheduler] == [
        'CosineAnnealingLR', 'CosineAnnealingLR', 'CosineAnnealingMomentum',
        'CosineAnnealingMomentum'
    ]
    max_iters = max_epochs * epoch_len
    assert len(records) == max_iters
    peak_lr, lr_errors, momentum_errors = 1e-3, [], []
    for cur_iter, _, lr, momentum in records:
        lr_errors.append(
            abs(lr - mmcv_cyclic(1e-4, cur_iter, max_iters, (10, 1e-4), 0.4))
            / peak_lr)
        momentum_errors.append(
            abs(momentum - mmcv_cyclic(0.9, cur_iter, max_iters,
                                       (0.85 / 0.95, 1), 0.4)))
    # mmengine's chained cosine phases end one step short of mmcv's exact
    # phase boundary; the curves agree within a fraction of a percent.
    assert max(lr_errors) < 5e-3, max(lr_errors)
    assert max(momentum_errors) < 5e-3, max(momentum_errors)
    # AdamW's beta1 default 0.9: the momentum dips to 0.9 * 0.85 / 0.95.
    lowest = min(r[3] for r in records)
    assert lowest == pytest.approx(0.9 * 0.85 / 0.95, abs=2e-3)


def test_step_with_warmup_follows_mmcv(tmp_path):
    schedule = upstream(SCHEDULE_2X).replace('warmup_iters=1000',
                                             'warmup_iters=15')
    schedule = schedule.replace('step=[20, 23]', 'step=[2, 3]')
    schedule = schedule.replace('max_epochs=24', 'max_epochs=4')
    path = _write(tmp_path, _toy_0x(schedule, ''))
    cfg, records = _train_records(path)
    assert cfg.param_scheduler == [
        dict(type='LinearLR', start_factor=1.0 / 1000, end_factor=1.0,
             begin=0, end=16, by_epoch=False),
        dict(type='MultiStepLR', milestones=[2, 3], gamma=0.1,
             by_epoch=True, begin=0, end=4),
    ]
    assert len(records) == 40
    for cur_iter, epoch, lr, _ in records:
        expected = mmcv_step_warmup(1e-3, epoch, cur_iter, [2, 3], 0.1, 15,
                                    1.0 / 1000)
        assert lr == pytest.approx(expected, rel=1e-6), (cur_iter, epoch)


def _default_runtime_checks(cfg):
    assert cfg.default_hooks.checkpoint == dict(type='CheckpointHook',
                                                interval=1)
    assert cfg.default_hooks.logger == dict(type='LoggerHook', interval=50)
    assert cfg.visualizer.vis_backends == [
        dict(type='LocalVisBackend'),
        dict(type='TensorboardVisBackend')
    ]
    assert cfg.env_cfg == dict(
        dist_cfg=dict(backend='nccl'),
        mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0))
    assert cfg.default_scope == 'mmdet3d'
    assert not cfg.get('resume', False)


def test_full_0x_schedule_and_runtime(tmp_path):
    cfg, rows = _translate(
        upstream(CYCLIC_20E) + upstream(DEFAULT_RUNTIME), tmp_path)
    assert not set(LEGACY_KEYS) & set(cfg.keys())
    assert cfg.optim_wrapper == dict(
        type='OptimWrapper',
        optimizer=dict(type='AdamW', lr=1e-4, weight_decay=0.01),
        clip_grad=dict(max_norm=35, norm_type=2))
    assert cfg.train_cfg == dict(by_epoch=True, max_epochs=20,
                                 val_interval=1)
    lr_phases = cfg.param_scheduler[:2]
    assert lr_phases == [
        dict(type='CosineAnnealingLR', eta_min_ratio=10, begin=0, end=8,
             by_epoch=True, convert_to_iter_based=True),
        dict(type='CosineAnnealingLR', eta_min_ratio=1e-4, begin=8, end=20,
             by_epoch=True, convert_to_iter_based=True),
    ]
    assert [s['eta_min_ratio'] for s in cfg.param_scheduler[2:]] == [
        0.85 / 0.95, 1
    ]
    _default_runtime_checks(cfg)
    table = format_migration_table(rows)
    for old in ("lr_config(policy='cyclic')", 'optimizer_config.grad_clip',
                'log_config.interval', 'workflow', 'dist_params'):
        assert old in table
    assert table.splitlines()[0].split() == ['0.x', 'key', 'mmengine', 'key',
                                             'value']


def test_seed_snippets_on_a_1x_base(tmp_path):
    path = _write(
        tmp_path,
        f'_base_ = [{MMDET3D_CENTERPOINT!r}]\n' + SNIPPET_ACCUM + SNIPPET_FP16)
    with collect_logs() as logs:
        cfg = load_config(path)
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    assert cfg.optim_wrapper.loss_scale == 512.
    assert cfg.optim_wrapper.accumulative_counts == 4
    # The 1.x base's optimizer and clipping stay.
    assert cfg.optim_wrapper.optimizer == dict(type='AdamW', lr=1e-4,
                                               weight_decay=0.01)
    assert cfg.optim_wrapper.clip_grad == dict(max_norm=35, norm_type=2)
    assert 'optimizer_config' not in cfg and 'fp16' not in cfg
    table = next(m for m in logs.messages if 'translated 2 mmdet3d 0.x' in m)
    assert 'optimizer_config.cumulative_iters' in table
    assert 'optim_wrapper.accumulative_counts' in table


def _toy_snippet_cfg(tmp_path, snippets: str) -> str:
    return _write(
        tmp_path, f"""
model = dict(type='ToyRegressor')
data = dict(samples_per_gpu=2, workers_per_gpu=0,
            train=dict(type='ToyRegressionDataset', size=16))
optimizer = dict(type='SGD', lr=0.1, momentum=0.0)
{snippets}
runner = dict(type='IterBasedRunner', max_iters=8)
checkpoint_config = dict(interval=-1)
log_config = dict(interval=1)
seed = 0
""")


def test_seed_accumulation_snippet_trains(tmp_path):
    cfg = load_config(_toy_snippet_cfg(tmp_path, SNIPPET_ACCUM))
    cfg.work_dir = str(tmp_path / 'work')
    isolate_runner(cfg, 'snippet_accum')
    runner = RUNNERS.build(cfg)
    runner.train()
    # Same parameters as the native config: x4 accumulation, 8 iterations.
    # 0.x shuffled training data; the translation keeps that.
    assert cfg.train_dataloader.sampler == dict(type='DefaultSampler',
                                                shuffle=True)
    native = toy_cfg(tmp_path / 'native', batch_size=2, max_iters=8,
                     accum=4)
    native.train_dataloader.sampler.shuffle = True
    native = RUNNERS.build(native)
    native.train()
    for name, value in parameters_of(native.model).items():
        assert (parameters_of(runner.model)[name] - value).abs().max() <= \
            1e-6 * value.abs().max()


@requires_no_cuda
@pytest.mark.parametrize('cpu_bf16, alternative', [
    ('native', r"--amp bf16 \(preset 'bf16'.*--amp fp32"),
    ('emulated', r'float32 with --amp fp32'),
])
def test_seed_fp16_snippet_refused_without_gpu(tmp_path, monkeypatch,
                                               cpu_bf16, alternative):
    monkeypatch.setenv(CPU_BF16_ENV, cpu_bf16)
    cfg = load_config(
        _toy_snippet_cfg(tmp_path, SNIPPET_ACCUM + SNIPPET_FP16))
    with pytest.raises(RuntimeError,
                       match=r"preset 'fp16' .*0\.x fp16=dict\(loss_scale"
                       r"=512\.\).*needs a CUDA GPU.*" + alternative):
        check_amp_supported(cfg)


@requires_cuda
def test_seed_fp16_snippet_trains_on_gpu(tmp_path):
    cfg = load_config(
        _toy_snippet_cfg(tmp_path, SNIPPET_ACCUM + SNIPPET_FP16))
    check_amp_supported(cfg)
    cfg.work_dir = str(tmp_path / 'work')
    runner = RUNNERS.build(cfg)
    runner.train()
    assert type(runner.optim_wrapper).__name__ == 'AmpOptimWrapper'


@pytest.mark.parametrize('text, expected', [
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "optimizer_config = dict(type='Fp16OptimizerHook', loss_scale=256,"
     ' grad_clip=None)\n',
     dict(type='AmpOptimWrapper', dtype='float16', loss_scale=256.0,
          optimizer=dict(type='SGD', lr=0.1))),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "optimizer_config = dict(type='GradientCumulativeFp16OptimizerHook',"
     " cumulative_iters=2, loss_scale='dynamic')\n",
     dict(type='AmpOptimWrapper', dtype='float16', loss_scale='dynamic',
          accumulative_counts=2, optimizer=dict(type='SGD', lr=0.1))),
    ("optimizer = dict(type='AdamW', lr=0.1, paramwise_cfg=dict("
     "custom_keys={'head': dict(lr_mult=0.1)}))\n"
     'optimizer_config = dict(grad_clip=None)\n',
     dict(type='OptimWrapper', optimizer=dict(type='AdamW', lr=0.1),
          paramwise_cfg=dict(custom_keys={'head': dict(lr_mult=0.1)}))),
])
def test_optimizer_variants(tmp_path, text, expected):
    cfg, _ = _translate(text, tmp_path)
    assert cfg.optim_wrapper == expected


def test_runtime_keys(tmp_path):
    cfg, rows = _translate(
        "optimizer = dict(type='SGD', lr=0.1)\n"
        "runner = dict(type='IterBasedRunner', max_iters=100)\n"
        'lr_config = dict(policy=\'step\', by_epoch=False, step=[60, 80])\n'
        'evaluation = dict(interval=50, save_best=\'auto\', metric=\'bbox\')\n'
        'checkpoint_config = dict(interval=50, max_keep_ckpts=2)\n'
        "resume_from = 'work/iter_50.pth'\n"
        'seed = 3\ndeterministic = True\ncudnn_benchmark = True\n'
        "gpu_ids = [0]\nmodel_wrapper_cfg = dict(type='MMDistributedDataPar"
        "allel')\nfind_unused_parameters = True\n", tmp_path)
    assert cfg.train_cfg == dict(by_epoch=False, max_iters=100,
                                 val_interval=50)
    assert cfg.param_scheduler == [
        dict(type='MultiStepLR', milestones=[60, 80], gamma=0.1,
             by_epoch=False, begin=0, end=100)
    ]
    assert cfg.default_hooks.checkpoint == dict(
        type='CheckpointHook', save_best='auto', interval=50,
        max_keep_ckpts=2, by_epoch=False)
    assert cfg.log_processor == dict(by_epoch=False)
    assert (cfg.load_from, cfg.resume) == ('work/iter_50.pth', True)
    assert cfg.randomness == dict(seed=3, deterministic=True)
    assert cfg.env_cfg == dict(cudnn_benchmark=True)
    assert cfg.model_wrapper_cfg == dict(type='MMDistributedDataParallel',
                                         find_unused_parameters=True)
    assert 'find_unused_parameters' not in cfg and 'gpu_ids' not in cfg
    assert ('evaluation.metric', '(dropped: set val_evaluator / the val '
            'pipeline)', 'bbox') in rows


def test_cosine_annealing_policy(tmp_path):
    cfg, _ = _translate(
        "optimizer = dict(type='SGD', lr=0.1)\n"
        "lr_config = dict(policy='CosineAnnealing', warmup='linear', "
        'warmup_iters=1000, warmup_ratio=1.0 / 10, min_lr_ratio=1e-5)\n'
        'runner = dict(type=\'EpochBasedRunner\', max_epochs=80)\n', tmp_path)
    assert cfg.param_scheduler == [
        dict(type='LinearLR', start_factor=0.1, end_factor=1.0, begin=0,
             end=1001, by_epoch=False),
        dict(type='CosineAnnealingLR', T_max=80, begin=0, end=80,
             by_epoch=True, eta_min_ratio=1e-5),
    ]


def test_1x_config_is_untouched():
    cfg = Config.fromfile(
        str(REPO / 'configs/centerpoint/'
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py'))
    out, rows = translate_legacy(cfg)
    assert out is cfg and rows == []


@pytest.mark.parametrize('text, match', [
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "lr_config = dict(policy='poly', power=1.0)\n"
     "runner = dict(type='EpochBasedRunner', max_epochs=2)\n",
     r"lr_config.policy='poly' has no translation .*PolyLR"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "lr_config = dict(policy='cyclic', cyclic_times=2)\n"
     "runner = dict(type='EpochBasedRunner', max_epochs=2)\n",
     'cyclic_times=2, gamma=1: only one cycle'),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "lr_config = dict(policy='cyclic')\n",
     "cyclic' needs the training length"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "lr_config = dict(policy='step', step=[1], warmup='exp')\n",
     "lr_config.warmup='exp' has no translation"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "lr_config = dict(policy='step', step=[10])\n"
     "runner = dict(type='IterBasedRunner', max_iters=20)\n",
     'set lr_config.by_epoch=False'),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "momentum_config = dict(policy='step', step=[1])\n",
     "momentum_config.policy='step' has no translation"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "runner = dict(type='CustomRunner', max_epochs=2)\n",
     "runner.type='CustomRunner' has no translation"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     "optimizer_config = dict(type='MyOptimizerHook')\n",
     "optimizer_config.type='MyOptimizerHook' has no translation"),
    ("optimizer = dict(type='SGD', lr=0.1)\n"
     'optimizer_config = dict(detect_anomalous_params=True)\n',
     'detect_anomalous_params=True\\)'),
    ("optimizer_config = dict(cumulative_iters=2)\n",
     '`optimizer_config` needs an optimizer'),
    ("fp16 = dict(loss_scale=512., fp16_enabled=True)\n"
     "optimizer = dict(type='SGD', lr=0.1)\n",
     r"fp16 has keys \['fp16_enabled'\]"),
    ("log_config = dict(hooks=[dict(type='NeptuneLoggerHook')])\n",
     "'NeptuneLoggerHook' has no translation"),
    ("data = dict(val=dict(type='ToyRegressionDataset'))\n",
     r'data.val \(ToyRegressionDataset\) needs an evaluator.*add '
     r'val_evaluator'),
    ('data = dict(samples_per_gpu=2)\n',
     'there is no data.train dataset and no train_dataloader'),
])
def test_refusals(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        _translate(text, tmp_path)


def test_0x_nuscenes_data_builds(nus_synthetic):
    """mmdet3d 0.x's CenterPoint pillar config: its data settings build on
    the generated data (moved there as --data-root does)."""
    root = str(nus_synthetic)
    cfg, _ = translate_legacy(
        Config.fromfile(str(mmdet3d_0x_configs() / PILLAR02_0X)))
    redirect_data_root(cfg, root)
    loader = cfg.train_dataloader
    assert (loader.batch_size, loader.num_workers) == (4, 4)
    # 0.x's builder ignored the keys merged beside CBGSDataset's dataset.
    assert set(loader.dataset) == {'type', 'dataset'}
    inner = loader.dataset.dataset
    assert inner.ann_file == 'nuscenes_infos_train.pkl'
    assert inner.metainfo.classes[0] == 'car'
    assert inner.pipeline[-1] == dict(
        type='Pack3DDetInputs', keys=['points', 'gt_bboxes_3d',
                                      'gt_labels_3d'])
    assert inner.pipeline[0]['backend_args'] is None
    sampler = inner.pipeline[3]['db_sampler']
    assert sampler['points_loader']['backend_args'] is None
    assert 'file_client_args' not in sampler['points_loader']
    assert cfg.val_dataloader.batch_size == 1
    assert cfg.val_evaluator == dict(
        type='NuScenesMetric', data_root=root + '/',
        ann_file=root + '/nuscenes_infos_val.pkl', metric='bbox')
    assert cfg.train_cfg.val_interval == 20
    assert cfg.val_dataloader.dataset.pipeline[-1] == dict(
        type='Pack3DDetInputs', keys=['points'])

    train = DATASETS.build(loader.dataset)
    sample = train[0]
    assert sample['inputs']['points'].shape[1] == 5
    assert len(sample['data_samples'].gt_instances_3d.bboxes_3d) > 0
    val = DATASETS.build(cfg.val_dataloader.dataset)
    assert val[0]['inputs']['points'].shape[0] > 0


def test_migrate_config_tool(tmp_path):
    old = _toy_snippet_cfg(tmp_path, SNIPPET_ACCUM + "presets = ['bf16']\n")
    new = tmp_path / 'migrated.py'
    tool = runpy.run_path(str(REPO / 'tools/migrate_config.py'),
                          run_name='migrate_config')
    tool['main']([old, str(new), '--no-plugin'])
    text = new.read_text()
    for key in LEGACY_KEYS + ('presets', 'runner_type'):
        assert f'\n{key} = ' not in text and not text.startswith(key)
    cfg = Config.fromfile(str(new))
    assert cfg.optim_wrapper.accumulative_counts == 4
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'  # stock bf16: GPU

    tool['main']([old, str(new)])
    cfg = Config.fromfile(str(new))
    assert cfg.runner_type == 'PluginRunner'
    assert 'projects.mmdet3d_plugin' in cfg.custom_imports.imports
    # A stock mmengine Runner trains the migrated plain config.
    cfg.work_dir = str(tmp_path / 'work')
    cfg.optim_wrapper.type = 'OptimWrapper'
    cfg.optim_wrapper.pop('dtype')
    runner = Runner.from_cfg(isolate_runner(cfg, 'migrated'))
    runner.train()
    assert runner.iter == 8
