"""Runner-side pieces: accumulation-aware LR scaling, AMP checks, bfloat16 on
CPU, exact resume inside an accumulation cycle."""
from .accumulation_resume_hook import AccumulationResumeHook
from .amp import (AmpUnsupportedError, accumulative_counts_of,
                  check_amp_supported,
                  warn_accumulation_with_batchnorm)
from .atomic_checkpoint import (AtomicLocalBackend, atomic_write,
                                use_atomic_checkpoints)
from .bf16_optim_wrapper import BF16AmpOptimWrapper
from .lr_scaling import effective_batch_size, effective_lr, lr_scale_factor
from .runner import PluginRunner
from .tool_errors import run_tool

__all__ = [
    'AccumulationResumeHook', 'AmpUnsupportedError', 'AtomicLocalBackend',
    'BF16AmpOptimWrapper',
    'PluginRunner', 'accumulative_counts_of', 'atomic_write',
    'check_amp_supported', 'effective_batch_size', 'effective_lr',
    'lr_scale_factor', 'run_tool', 'use_atomic_checkpoints',
    'warn_accumulation_with_batchnorm'
]
