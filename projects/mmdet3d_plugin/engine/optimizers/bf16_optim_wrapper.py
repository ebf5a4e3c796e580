"""bfloat16 autocast on GPU and CPU.

mmengine 0.10.7's ``AmpOptimWrapper.__init__`` asserts that a GPU (or NPU,
MLU, MUSA) is present, even for ``dtype='bfloat16'``, although
``torch.autocast(device_type='cpu', dtype=torch.bfloat16)`` works. This
subclass skips that check and, because bfloat16 has float32's exponent
range, uses no loss scaler. Remove when mmengine's wrapper accepts CPU.
"""
from contextlib import contextmanager
from typing import Optional, Union

import torch
from mmengine.device import get_device
from mmengine.optim import AmpOptimWrapper, OptimWrapper
from mmengine.runner.amp import autocast
from mmdet3d.registry import OPTIM_WRAPPERS
from torch import nn


@OPTIM_WRAPPERS.register_module()
class BF16AmpOptimWrapper(AmpOptimWrapper):
    """``AmpOptimWrapper`` for bfloat16 that also runs on CPU.

    Forward passes run under ``torch.autocast`` with bfloat16 on the device
    of the model (CUDA or CPU); backward and the optimizer step are those of
    :class:`mmengine.optim.OptimWrapper` (no loss scaling), so gradient
    accumulation and ``clip_grad`` work as usual. Checkpoints from
    ``AmpOptimWrapper`` load (their ``loss_scaler`` state is ignored).

    Args:
        dtype (str | torch.dtype): Autocast dtype; only bfloat16 is
            accepted. Defaults to 'bfloat16'.
        loss_scale (None): bfloat16 needs no loss scaling; any other value
            is refused. Defaults to None.
        **kwargs: Arguments of :class:`mmengine.optim.OptimWrapper`
            (``optimizer``, ``accumulative_counts``, ``clip_grad``).

    Examples:
        >>> optim_wrapper = dict(
        ...     type='BF16AmpOptimWrapper',
        ...     optimizer=dict(type='AdamW', lr=1e-4),
        ...     accumulative_counts=4)
    """

    def __init__(self,
                 dtype: Union[str, torch.dtype] = 'bfloat16',
                 loss_scale: Optional[str] = None,
                 **kwargs):
        if dtype not in ('bfloat16', torch.bfloat16):
            raise ValueError(
                f'BF16AmpOptimWrapper: dtype must be bfloat16, got {dtype!r}; '
                "use type='AmpOptimWrapper' (GPU only) for float16.")
        if loss_scale is not None:
            raise ValueError(
                f'BF16AmpOptimWrapper: got loss_scale={loss_scale!r}, but '
                'bfloat16 has the exponent range of float32 and is trained '
                'without loss scaling; remove loss_scale (it is for float16 '
                "with type='AmpOptimWrapper').")
        # AmpOptimWrapper.__init__ would assert a GPU and build a GradScaler;
        # neither applies to bfloat16.
        OptimWrapper.__init__(self, **kwargs)
        self.cast_dtype = torch.bfloat16
        self.loss_scaler = None
        self.device_type = get_device()

    def backward(self, loss: torch.Tensor, **kwargs) -> None:
        """Back-propagate without loss scaling (see ``OptimWrapper``)."""
        OptimWrapper.backward(self, loss, **kwargs)

    def step(self, **kwargs) -> None:
        """Clip (if configured) and step (see ``OptimWrapper``)."""
        OptimWrapper.step(self, **kwargs)

    def state_dict(self) -> dict:
        """State of the optimizer (there is no loss scaler)."""
        return OptimWrapper.state_dict(self)

    def load_state_dict(self, state_dict: dict) -> None:
        """Load optimizer state; a ``loss_scaler`` entry is ignored.

        Args:
            state_dict (dict): From this wrapper, ``OptimWrapper`` or
                ``AmpOptimWrapper``.
        """
        state_dict = dict(state_dict)
        state_dict.pop('loss_scaler', None)
        OptimWrapper.load_state_dict(self, state_dict)

    @contextmanager
    def optim_context(self, model: nn.Module):
        """Accumulation context of ``OptimWrapper`` plus bfloat16 autocast
        on the model's device.

        Args:
            model (nn.Module): The training model.
        """
        device_type = self.device_type
        for param in model.parameters():
            device_type = param.device.type
            break
        with OptimWrapper.optim_context(self, model), autocast(
                device_type=device_type, dtype=self.cast_dtype):
            yield
