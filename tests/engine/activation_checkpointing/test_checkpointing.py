"""Activation checkpointing keeps what training computes: the same loss and
gradients, BatchNorm statistics moved once, the same random draws, every
parameter's gradient; mmengine's key goes through it under PluginRunner;
a checkpointed parameter without gradient stops the run at once.

The comparisons run on one intra-op thread: with two, a CPU step of the
sparse models is not reproducible run to run (a CenterPoint voxel0075 loss
moved by 0.4 % between two plain steps on the same batch).
"""
import copy
import json
import math
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import turn_on_activation_checkpointing as mmengine_on
from torch import nn

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.cli.runner_setup import (build_runner,
                                                      isolate_runner)
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.presets import merge_presets
from projects.mmdet3d_plugin.engine.activation_checkpointing.checkpointing \
    import (auto_modules, checkpointed_modules, is_checkpointed,
            resolve_modules, turn_off_activation_checkpointing,
            turn_on_activation_checkpointing)
from projects.mmdet3d_plugin.engine.activation_checkpointing \
    .gradient_coverage_hook import GradientCoverageHook
from projects.mmdet3d_plugin.failures.exceptions import GradientCoverageError
from tests.helpers.model_steps import buffers, loss_and_grads, model_and_batch
from tests.helpers.toy_models import runner_cfg

REPO_ROOT = Path(__file__).resolve().parents[3]
CENTERPOINT = 'configs/centerpoint/centerpoint_pillar_synthetic.py'
#: mmengine's documented value ("save GPU memory"), as the issue tried it.
MMENGINE_KEY = ['pts_backbone', 'pts_neck', 'pts_bbox_head']


@pytest.fixture(autouse=True)
def one_intra_op_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def assert_same_step(model, data, modules):
    """Loss, every gradient and every buffer after one step equal with and
    without checkpointing ``modules``; no parameter without gradient."""
    start = buffers(model)
    terms, grads = loss_and_grads(model, data)
    after = buffers(model)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            buffer.copy_(start[name])
    names = turn_on_activation_checkpointing(model, modules)
    try:
        terms_ckpt, grads_ckpt = loss_and_grads(model, data)
    finally:
        turn_off_activation_checkpointing(model)
    after_ckpt = buffers(model)
    assert names
    for key in terms:
        torch.testing.assert_close(terms_ckpt[key], terms[key], rtol=1e-5,
                                   atol=0, msg=key)
    assert [n for n, g in grads_ckpt.items() if g is None] == []
    for name, grad in grads.items():
        torch.testing.assert_close(grads_ckpt[name], grad, rtol=1e-5,
                                   atol=1e-8, msg=name)
    moved = [n for n in start if not torch.equal(start[n], after[n])]
    assert any('running_mean' in n for n in moved)
    for name in after:
        assert torch.equal(after_ckpt[name], after[name]), name
    return names


# -- the machinery on small modules --------------------------------------

class ListBlock(nn.Module):
    """Takes a list and a keyword argument; BatchNorm and dropout inside."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, xs, scale=1.0):
        return [self.drop(self.bn(self.conv(x)).relu()) * scale for x in xs]


class ListNet(nn.Module):

    def __init__(self):
        super().__init__()
        self.block = ListBlock()
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, xs):
        return sum(self.head(y).mean() for y in self.block(xs, scale=2.0))


def _list_step(net, xs, seed=0):
    torch.manual_seed(seed)
    net.zero_grad(set_to_none=True)
    loss = net(xs)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in
                           net.named_parameters()}


def test_list_input_keyword_dropout_and_batchnorm():
    """Inputs that do not require grad, in a list, with a keyword argument:
    every weight gets its gradient, dropout draws the same mask in the
    recomputation, BatchNorm's statistics move once."""
    torch.manual_seed(0)
    net = ListNet().train()
    xs = [torch.randn(2, 4, 6, 6) for _ in range(2)]
    start = buffers(net)
    keys = set(net.state_dict())
    loss, grads = _list_step(net, xs)
    plain = buffers(net)
    net.load_state_dict({**net.state_dict(), **start})
    turn_on_activation_checkpointing(net, 'block')
    assert is_checkpointed(net.block)
    assert type(net.block).__name__ == 'ListBlock'
    assert isinstance(net.block, ListBlock)
    loss_ckpt, grads_ckpt = _list_step(net, xs)
    assert torch.equal(loss_ckpt, loss)
    for name in grads:
        assert torch.equal(grads_ckpt[name], grads[name]), name
    for name, value in buffers(net).items():
        assert torch.equal(value, plain[name]), name
    assert int(net.block.bn.num_batches_tracked) == len(xs)
    # The state_dict keys and evaluation are those of the plain module.
    assert set(net.state_dict()) == keys
    net.eval()
    with torch.no_grad():
        assert torch.isfinite(net(xs))


def test_mmengine_reentrant_wrapper_fails_on_such_a_module():
    """What the plugin's runner replaces: mmengine's wrapper refuses the
    keyword argument, and a list input leaves the outputs without graph."""
    torch.manual_seed(0)
    net = ListNet().train()
    mmengine_on(net, ['block'])
    xs = [torch.randn(2, 4, 6, 6)]
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        net(xs)
    with pytest.raises(RuntimeError, match='does not require grad'):
        sum(y.mean() for y in net.block(xs)).backward()


def test_turn_off_restores_the_class():
    net = ListNet()
    turn_on_activation_checkpointing(net, ['block', 'head'])
    assert [n for n, _ in checkpointed_modules(net)] == ['block', 'head']
    assert turn_off_activation_checkpointing(net) == ['block', 'head']
    assert type(net.block) is ListBlock and type(net.head) is nn.Conv2d
    # The copy EMAHook makes is checkpointed the same way.
    turn_on_activation_checkpointing(net, 'block')
    assert is_checkpointed(copy.deepcopy(net).block)


@pytest.mark.parametrize('value, error, words', [
    ('bloc', ValueError, "'bloc' names no module of ListNet; modules "
     "there: ['block', 'head']"),
    (['block', 'block.conv'], ValueError,
     "'block.conv' lies inside 'block'"),
    ('', ValueError, 'whole model'),
    (dict(block=True), TypeError, 'expected a module name'),
    ('auto', ValueError, "'auto' knows none of the parts of ListNet"),
])
def test_bad_values_name_the_fix(value, error, words):
    with pytest.raises(error, match='activation_checkpointing: ') as info:
        resolve_modules(ListNet(), value)
    assert words in str(info.value)


def test_patterns_match_one_part_of_a_name():
    net = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.ReLU()),
                        nn.Sequential(nn.Linear(2, 2)))
    assert resolve_modules(net, '*') == ['0', '1']
    assert resolve_modules(net, '*.0') == ['0.0', '1.0']


# -- the shipped configs --------------------------------------------------

def test_auto_parts_of_the_shipped_centerpoint(nus_synthetic):
    cfg, model, _ = model_and_batch(str(REPO_ROOT / CENTERPOINT),
                                    nus_synthetic, 1)
    heads = len(cfg.model.pts_bbox_head.tasks)
    assert auto_modules(model) == (
        [f'pts_voxel_encoder.pfn_layers.{i}'
         for i in range(len(model.pts_voxel_encoder.pfn_layers))] +
        [f'pts_backbone.blocks.{i}'
         for i in range(len(model.pts_backbone.blocks))] +
        ['pts_neck', 'pts_bbox_head.shared_conv'] +
        [f'pts_bbox_head.task_heads.{i}' for i in range(heads)])


@pytest.mark.parametrize('config', [
    CENTERPOINT,
    'configs/voxelnet/voxelnet_voxel_synthetic.py',
])
def test_synthetic_configs_step_equal(config, nus_synthetic):
    _, model, data = model_and_batch(str(REPO_ROOT / config), nus_synthetic,
                                     2)
    assert_same_step(model, data, 'auto')


def _train_one_iteration(work_dir, data_root, name, presets=(), **keys):
    cfg = load_config(str(REPO_ROOT / CENTERPOINT), cfg_options={
        'train_cfg.max_iters': 1, 'train_cfg.val_interval': 100,
        'val_cfg': None, 'val_dataloader': None, 'val_evaluator': None,
        'train_dataloader.num_workers': 0,
        'train_dataloader.persistent_workers': False,
        'default_hooks.checkpoint': None,
        'randomness': dict(seed=0), **keys})
    merge_presets(cfg, presets)
    redirect_data_root(cfg, data_root)
    cfg.work_dir = str(work_dir / name)
    runner = build_runner(isolate_runner(cfg, f'ckpt_{name}'))
    runner.train()
    return runner


def test_mmengine_key_trains_as_without_it(nus_synthetic, tmp_path):
    """mmengine's own ``activation_checkpointing`` on the shipped
    CenterPoint config: the plugin's runner checkpoints those modules its
    way, and one training iteration leaves every weight and buffer as
    without the key (mmengine's wrapper fails in the first backward)."""
    plain = _train_one_iteration(tmp_path, nus_synthetic, 'plain')
    keyed = _train_one_iteration(tmp_path, nus_synthetic, 'keyed',
                                 activation_checkpointing=MMENGINE_KEY)
    model = keyed.model
    assert [n for n, _ in checkpointed_modules(model)] == MMENGINE_KEY
    assert 'activation_checkpointing' not in keyed.cfg
    assert any(isinstance(h, GradientCoverageHook) for h in keyed.hooks)
    assert math.isfinite(keyed.message_hub.get_scalar('train/loss')
                         .current())
    expected = plain.model.state_dict()
    for name, value in model.state_dict().items():
        assert torch.equal(value, expected[name]), name
    # The preset: 'auto' through the same runner.
    preset = _train_one_iteration(tmp_path, nus_synthetic, 'preset',
                                  presets=['activation_checkpointing'])
    assert [n for n, _ in checkpointed_modules(preset.model)] == \
        auto_modules(preset.model)


def test_a_checkpointed_parameter_without_gradient_stops_the_run(tmp_path):
    """``dead`` is never called: checkpointed, its parameters get no
    gradient, and the first iteration ends the run naming them."""
    cfg = runner_cfg(str(tmp_path), hook=dict(type='EmptyCacheHook'))
    cfg['activation_checkpointing'] = ['stem', 'dead']
    cfg['runner_type'] = 'PluginRunner'
    runner = build_runner(isolate_runner(Config(cfg), 'coverage'))
    with pytest.raises(GradientCoverageError) as info:
        runner.train()
    assert runner.iter == 0
    assert str(info.value).startswith(
        "GradientCoverageHook: 2 trainable parameter(s) of the activation-"
        "checkpointed module(s) ['dead'] got no gradient in the first "
        'backward: dead.weight, dead.bias.')
    assert 'activation_checkpointing' in str(info.value)


def test_checkpointed_parameters_with_gradients_train_on(tmp_path):
    cfg = runner_cfg(str(tmp_path), hook=dict(type='EmptyCacheHook'),
                     max_iters=2)
    cfg['activation_checkpointing'] = ['stem', 'head']
    cfg['runner_type'] = 'PluginRunner'
    runner = build_runner(isolate_runner(Config(cfg), 'coverage_ok'))
    runner.train()
    assert runner.iter == 2


@pytest.mark.full_size
@pytest.mark.parametrize('name, batch_size', [('voxel0075', 1),
                                              ('pillar02', 2),
                                              ('voxelnet_voxel01', 2)])
def test_full_size_configs_step_equal(name, batch_size, nus_synthetic):
    """The shipped full-size configs, the preset's parts, a batch of their
    own train pipelines (voxel0075's step is the costliest: one sample)."""
    _, model, data = model_and_batch(name, nus_synthetic, batch_size)
    names = assert_same_step(model, data, 'auto')
    assert any('backbone.blocks.' in n for n in names)
    assert any('middle_encoder.encoder_layers.' in n or
               'voxel_encoder.pfn_layers.' in n for n in names)


def coverage_rank(out):
    """One of 2 gloo ranks: the toy model under DDP with ``dead``
    checkpointed; writes ``rank<N>.json`` with the error it stopped on."""
    from mmdet3d.registry import RUNNERS
    from projects.mmdet3d_plugin.compat.cpu_dist import init_cpu_dist
    from mmengine.dist import get_rank

    init_cpu_dist(timeout=120)
    cfg = runner_cfg(str(out / 'work'), distributed=True, find_unused=True,
                     hook=dict(type='EmptyCacheHook'))
    cfg.update(activation_checkpointing=['stem', 'dead'],
               runner_type='PluginRunner')
    runner = RUNNERS.build(Config(cfg))
    result = dict(iter=None, error=None)
    try:
        runner.train()
    except GradientCoverageError as e:
        result.update(error=str(e))
    result['iter'] = runner.iter
    (out / f'rank{get_rank()}.json').write_text(json.dumps(result))
    return 0


def test_every_rank_stops_together(tmp_path):
    """Under 2-rank DDP the marks of both ranks are combined: both stop
    after the first iteration with the same error."""
    from tests.helpers.train_tool import fork_call
    group = fork_call(coverage_rank, tmp_path)  # hook: under 2-rank DDP
    output = group.communicate(timeout=240)[0]
    ranks = [json.loads((tmp_path / f'rank{r}.json').read_text())
             for r in range(2)]
    assert ranks[0] == ranks[1], output[-3000:]
    assert ranks[0]['iter'] == 0
    assert 'dead.weight, dead.bias' in ranks[0]['error']


def test_the_preset_composes_with_accumulation_and_precision():
    cfg = load_config(str(REPO_ROOT / CENTERPOINT))
    merge_presets(cfg, ['activation_checkpointing', 'grad_accum_x4', 'bf16'])
    assert cfg.activation_checkpointing == 'auto'
    assert cfg.optim_wrapper.accumulative_counts == 4
    assert cfg.optim_wrapper.type == 'BF16AmpOptimWrapper'
    chosen = load_config(str(REPO_ROOT / CENTERPOINT), cfg_options={
        'activation_checkpointing': ['auto', 'pts_middle_encoder']})
    assert chosen.activation_checkpointing == ['auto', 'pts_middle_encoder']
