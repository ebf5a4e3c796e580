"""StepGuard on mmengine's OptimWrapper, in one process: a cycle of
gradient accumulation with a NaN in one of its batches is skipped whole
(weights, momentum and BatchNorm statistics as before the cycle), the
next cycle updates as usual."""
import copy

import torch
from mmengine.optim import OptimWrapper
from torch import nn

from projects.mmdet3d_plugin.engine.nonfinite.guard import StepGuard


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))


def _iteration(guard, wrapper, model, x):
    guard.before_iter()
    wrapper.update_params(model(x).pow(2).mean())


def _state(model, wrapper):
    return (copy.deepcopy(model.state_dict()),
            copy.deepcopy(wrapper.optimizer.state_dict()['state']))


def _equal(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return torch.equal(a, b)


def test_a_cycle_with_a_nan_batch_is_skipped_whole():
    model = _model()
    wrapper = OptimWrapper(
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        accumulative_counts=2)
    wrapper.initialize_count_status(model, 0, 6)
    guard = StepGuard(wrapper, model)
    good = torch.randn(4, 4)
    bad = good.clone()
    bad[1, 2] = float('nan')

    for _ in range(2):  # one good cycle: momentum buffers exist
        _iteration(guard, wrapper, model, good)
    assert not guard.skipped
    before = _state(model, wrapper)
    _iteration(guard, wrapper, model, good)
    _iteration(guard, wrapper, model, bad)
    assert guard.skipped and guard.grad_norm != guard.grad_norm  # NaN
    assert _equal(_state(model, wrapper)[0], before[0])  # weights, BN
    assert _equal(_state(model, wrapper)[1], before[1])  # momentum
    assert all(p.grad is None or not p.grad.any()
               for p in model.parameters())
    for _ in range(2):
        _iteration(guard, wrapper, model, good)
    assert not guard.skipped
    assert not _equal(_state(model, wrapper)[0], before[0])
    guard.unwrap()
    assert 'step' not in vars(wrapper) and 'backward' not in vars(wrapper)
