"""Runner-side pieces: the registered hooks (indexed in ``hooks``, each in
its capability's folder: ``atomic_checkpoint``, ``bad_samples``,
``nonfinite``, ``preemption``, ``resume``, ``straggler``,
``unused_params``, ``watchdog``), the loops that resume exactly, what the
tools add to every training config (``run_defaults``), the bfloat16 optim
wrapper, accumulation-aware LR scaling, AMP checks."""
from . import resume  # noqa: F401  registers the resumable loops
from .amp import (AmpUnsupportedError, check_amp_supported,
                  warn_accumulation_with_batchnorm)
from .hooks import (AccumulationResumeHook, AtomicCheckpointHook,
                    BadSampleHook, DDPUnusedParamHook, DistWatchdogHook,
                    NonFiniteGuardHook, PreemptionHook, StragglerHook)
from .lr_scaling import effective_batch_size, effective_lr, lr_scale_factor
from .optimizers import BF16AmpOptimWrapper
from .run_defaults import apply_run_defaults
from .runner import PluginRunner

__all__ = [
    'AccumulationResumeHook', 'AmpUnsupportedError', 'AtomicCheckpointHook',
    'BF16AmpOptimWrapper', 'BadSampleHook', 'DDPUnusedParamHook',
    'DistWatchdogHook', 'NonFiniteGuardHook', 'PluginRunner',
    'PreemptionHook', 'StragglerHook', 'apply_run_defaults',
    'check_amp_supported', 'effective_batch_size', 'effective_lr',
    'lr_scale_factor', 'warn_accumulation_with_batchnorm'
]
