"""The one way a run is prepared (``cli.prepare_run``): its documented order,
one validation, and the checks that stop a run before anything is built."""
from pathlib import Path

import pytest

from tests.helpers.gpu import requires_no_cuda
from projects.mmdet3d_plugin.cli.prepare import prepare_run, timeout_error
from projects.mmdet3d_plugin.cli.parsers import train_parser
from projects.mmdet3d_plugin.cli.run import prepare_train
from projects.mmdet3d_plugin.failures.exceptions import AmpUnsupportedError

TOY = """
default_scope = 'mmdet3d'
model = dict(type='ToyModel')
train_dataloader = dict(
    batch_size=2, num_workers=0,
    dataset=dict(type='ToyDataset', data_root='/config/root/',
                 ann_file='infos.pkl', pipeline=[]))
train_cfg = dict(type='IterBasedTrainLoop', max_iters=10)
optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))
auto_scale_lr = dict(enable=False, base_batch_size=2)
"""
WATCHDOG = ("custom_hooks = [dict(type='DistWatchdogHook', timeout=2000, "
            'interval=10)]\n')


def _config(tmp_path: Path, extra: str = '') -> str:
    path = tmp_path / 'toy.py'
    path.write_text(TOY + extra)
    return str(path)


def test_cfg_options_come_before_amp_and_accum(tmp_path):
    cfg = prepare_run(
        _config(tmp_path, "presets = ['grad_accum_x2']\n"),
        cfg_options={'optim_wrapper.type': 'AmpOptimWrapper',
                     'optim_wrapper.loss_scale': 512.,
                     'optim_wrapper.accumulative_counts': 3},
        amp='bf16', accum=4, work_dir=str(tmp_path / 'work'), stop=False)
    # The preset set 2, --cfg-options 3, --accum 4: the last one wins;
    # --amp bf16 replaces the precision --cfg-options set.
    assert cfg.optim_wrapper.accumulative_counts == 4
    assert cfg.optim_wrapper.type == 'BF16AmpOptimWrapper'
    assert 'loss_scale' not in cfg.optim_wrapper


def test_fp32_flag_comes_after_cfg_options(tmp_path):
    cfg = prepare_run(
        _config(tmp_path),
        cfg_options={'optim_wrapper.type': 'AmpOptimWrapper'}, amp='fp32',
        work_dir=str(tmp_path / 'work'))
    assert cfg.optim_wrapper.type == 'OptimWrapper'


def test_data_root_comes_after_cfg_options(tmp_path):
    cfg = prepare_run(
        _config(tmp_path),
        cfg_options={'train_dataloader.dataset.data_root': '/options/'},
        data_root=str(tmp_path / 'flag'), work_dir=str(tmp_path / 'work'))
    assert cfg.train_dataloader.dataset.data_root == \
        str(tmp_path / 'flag') + '/'


def test_train_flags_reach_prepare_run(tmp_path):
    args = train_parser().parse_args([
        _config(tmp_path), '--accum', '2', '--auto-scale-lr', '--work-dir',
        str(tmp_path / 'work'), '--cfg-options', 'train_cfg.max_iters=5'
    ])
    cfg = prepare_train(args)
    assert cfg.optim_wrapper.accumulative_counts == 2
    assert cfg.auto_scale_lr.enable is True
    assert cfg.train_cfg.max_iters == 5
    assert cfg.work_dir == str(tmp_path / 'work')
    assert cfg.default_hooks.checkpoint.type == 'AtomicCheckpointHook'
    assert cfg.runner_type == 'PluginRunner'


def test_values_are_validated_once_after_every_flag(tmp_path):
    config = _config(tmp_path)
    bad = {'optim_wrapper.accumulative_counts': 0}
    # --accum is applied before the one validation, so it fixes the value.
    cfg = prepare_run(config, cfg_options=bad, accum=2,
                      work_dir=str(tmp_path / 'work'))
    assert cfg.optim_wrapper.accumulative_counts == 2
    with pytest.raises(ValueError, match=r'toy\.py \(after --cfg-options, '
                       r'--amp bf16\): optim_wrapper\.accumulative_counts '
                       'must be a positive integer'):
        prepare_run(config, cfg_options=bad, amp='bf16',
                    work_dir=str(tmp_path / 'work'))


def test_timeout_budget_stops_the_run_with_the_fix(tmp_path):
    config = _config(tmp_path, WATCHDOG)
    with pytest.raises(ValueError) as info:
        prepare_run(config, work_dir=str(tmp_path / 'work'))
    message = str(info.value)
    assert message.startswith('DistWatchdogHook: timeout=2000 s')
    assert '. Fix: ' in message
    cfg = prepare_run(config, work_dir=str(tmp_path / 'work'), stop=False)
    assert timeout_error(cfg) == message
    # Raising the process group's timeout is the fix it names.
    prepare_run(config, cfg_options={'env_cfg.dist_cfg.timeout': 4000},
                work_dir=str(tmp_path / 'work'))


@requires_no_cuda
def test_amp_check_stops_training_not_the_doctor(tmp_path):
    config = _config(tmp_path)
    with pytest.raises(AmpUnsupportedError, match='needs a CUDA GPU'):
        prepare_run(config, amp='fp16', work_dir=str(tmp_path / 'work'))
    cfg = prepare_run(config, amp='fp16', work_dir=str(tmp_path / 'work'),
                      stop=False)
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'


def test_test_run_needs_its_checkpoint(tmp_path):
    config = _config(tmp_path)
    with pytest.raises(FileNotFoundError, match='test: checkpoint'):
        prepare_run(config, 'test', checkpoint=str(tmp_path / 'no.pth'))
    checkpoint = tmp_path / 'model.pth'
    checkpoint.write_bytes(b'')
    cfg = prepare_run(config, 'test', checkpoint=str(checkpoint),
                      work_dir=str(tmp_path / 'work'))
    assert cfg.load_from == str(checkpoint)
    with pytest.raises(ValueError, match="run must be 'train' or 'test'"):
        prepare_run(config, 'val')


def test_a_resume_without_a_seed_takes_the_checkpoints(tmp_path):
    import torch
    from projects.mmdet3d_plugin.cli.prepare import keep_checkpoint_seed
    from mmengine.config import Config
    path = tmp_path / 'iter_4.pth'
    torch.save(dict(meta=dict(seed=1234), state_dict={}), path)
    cfg = Config(dict(randomness=dict(seed=None, deterministic=True)))
    keep_checkpoint_seed(cfg, str(path))
    assert cfg.randomness == dict(seed=1234, deterministic=True)
    fixed = Config(dict(randomness=dict(seed=5)))
    keep_checkpoint_seed(fixed, str(path))
    assert fixed.randomness.seed == 5
