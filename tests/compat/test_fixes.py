"""The stack fixes of ``projects.mmdet3d_plugin.compat``, through real runs."""
import io
import os
import pickle
import uuid

import pytest
import torch
from mmengine.logging import HistoryBuffer
from mmengine.model import BaseModel
from mmengine.runner import Runner
from torch import nn

import projects.mmdet3d_plugin  # noqa: F401  applies the fixes
from projects.mmdet3d_plugin.compat.cpu_dist import init_cpu_dist
from tests.helpers.torch_features import requires_weights_only_default
from tests.helpers.train_tool import fork_call


class _Linear(BaseModel):

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, inputs, data_samples=None, mode='loss'):
        x = torch.stack(inputs)
        return dict(loss=(self.fc(x) - x.sum(1, keepdim=True)).pow(2).mean())


class _Data(torch.utils.data.Dataset):

    def __len__(self):
        return 16

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return dict(inputs=torch.randn(4, generator=g))


def _runner(work_dir, max_iters, **kwargs):
    return Runner(
        model=_Linear(),
        work_dir=str(work_dir),
        experiment_name=f'fixes_{uuid.uuid4().hex[:8]}',
        train_dataloader=dict(
            dataset=_Data(),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=2,
            num_workers=0),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.05)),
        train_cfg=dict(by_epoch=False, max_iters=max_iters),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False),
            logger=dict(type='LoggerHook', interval=1)),
        default_scope='mmdet3d',
        **kwargs)


def test_resume_loads_mmengine_checkpoint_weights_only(tmp_path):
    full = _runner(tmp_path / 'full', 4)
    full.train()
    expected = full.model.fc.weight.detach().clone()

    # torch >= 2.6 loads weights-only by default; the message hub's
    # HistoryBuffer objects must load without turning safety off.
    ckpt = torch.load(tmp_path / 'full' / 'iter_2.pth')
    assert 'message_hub' in ckpt

    resumed = _runner(
        tmp_path / 'resumed', 4, resume=True,
        load_from=str(tmp_path / 'full' / 'iter_2.pth'))
    resumed.train()
    assert resumed.iter == 4
    torch.testing.assert_close(resumed.model.fc.weight, expected)


class _Evil:

    def __reduce__(self):
        return (os.system, ('echo pwned',))


class _EvilGetattr:

    def __reduce__(self):
        # Only HistoryBuffer statistics may be resolved through getattr.
        return (getattr, (HistoryBuffer, '__init__'))


@requires_weights_only_default
@pytest.mark.parametrize('payload', [_Evil(), _EvilGetattr()],
                         ids=['os.system', 'getattr(os, system)'])
def test_weights_only_still_refuses_arbitrary_code(payload):
    buf = io.BytesIO()
    torch.save({'x': payload}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError,
                       match='Weights only load failed|refusing getattr'):
        torch.load(buf)


def _ddp_rank(work_dir):
    assert init_cpu_dist()
    rank = torch.distributed.get_rank()
    runner = _runner(
        work_dir, 3, launcher='pytorch',
        cfg=dict(model_wrapper_cfg=dict(type='CPUDistributedDataParallel')))
    runner.train()
    torch.save(runner.model.module.fc.weight.detach().clone(),
               os.path.join(work_dir, f'weight_rank{rank}.pth'))
    torch.distributed.destroy_process_group()


def test_cpu_ddp_through_runner(tmp_path):
    ranks = fork_call(_ddp_rank, str(tmp_path))  # hook: the DDP wrapper
    out, _ = ranks.communicate(timeout=300)
    assert ranks.returncodes == [0, 0], out[-3000:]
    out = [torch.load(tmp_path / f'weight_rank{rank}.pth') for rank in (0, 1)]
    # DDP averaged the gradients: both replicas hold the same weights.
    torch.testing.assert_close(out[0], out[1])


def test_init_cpu_dist_names_missing_variables(monkeypatch):
    for key in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT',
                'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(RuntimeError,
                       match=r"init_cpu_dist: .*'RANK'.*dist_train\.sh"):
        init_cpu_dist()


def test_sparse_convolution_backward_runs_on_cpu():
    # spconv 2.3.8 asks torch.cuda for a stream in its backward pass.
    import spconv.pytorch as spconv
    conv = spconv.SparseConv3d(1, 1, 3)
    indices = torch.tensor([[0, 1, 1, 1], [0, 2, 2, 2]], dtype=torch.int32)
    features = torch.ones(2, 1, requires_grad=True)
    x = spconv.SparseConvTensor(features, indices, [4, 4, 4], 1)
    conv(x).features.sum().backward()
    assert features.grad is not None and conv.weight.grad is not None
