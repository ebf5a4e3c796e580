"""Runner-side pieces: hooks, the bfloat16 optim wrapper, accumulation-aware
LR scaling, AMP checks, the loops that resume exactly."""
from . import resume  # noqa: F401  registers the resumable loops
from .amp import (AmpUnsupportedError, check_amp_supported,
                  warn_accumulation_with_batchnorm)
from .hooks import (AccumulationResumeHook, AtomicCheckpointHook,
                    DDPUnusedParamHook, DistWatchdogHook, PreemptionHook,
                    StragglerHook,
                    use_atomic_checkpoints)
from .lr_scaling import effective_batch_size, effective_lr, lr_scale_factor
from .optimizers import BF16AmpOptimWrapper
from .runner import PluginRunner

__all__ = [
    'AccumulationResumeHook', 'AmpUnsupportedError', 'AtomicCheckpointHook',
    'BF16AmpOptimWrapper', 'DDPUnusedParamHook', 'DistWatchdogHook',
    'PluginRunner', 'PreemptionHook', 'StragglerHook',
    'check_amp_supported',
    'effective_batch_size', 'effective_lr', 'lr_scale_factor',
    'use_atomic_checkpoints', 'warn_accumulation_with_batchnorm'
]
