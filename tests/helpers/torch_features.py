"""The one place that decides which tests need a torch newer than the
oldest supported one (2.1.2): each marker skips with the missing feature
and the torch that brought it."""
import pytest
import torch

from projects.mmdet3d_plugin.compat.torch_api import (has_cpu_grad_scaler,
                                                      torch_at_least)

requires_cpu_grad_scaler = pytest.mark.skipif(
    not has_cpu_grad_scaler(),
    reason=f'needs torch >= 2.3 for a CPU GradScaler '
    f"(torch.amp.GradScaler('cpu')); torch {torch.__version__} has only "
    'torch.cuda.amp.GradScaler')

requires_weights_only_default = pytest.mark.skipif(
    not torch_at_least('2.6'),
    reason=f'needs torch >= 2.6, whose torch.load is weights-only by '
    f'default; torch {torch.__version__} loads any pickle unless '
    'weights_only=True is passed')
