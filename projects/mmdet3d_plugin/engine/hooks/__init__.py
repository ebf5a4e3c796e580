from .accumulation_resume_hook import AccumulationResumeHook
from .atomic_checkpoint_hook import (AtomicCheckpointHook,
                                     use_atomic_checkpoints)
from .ddp_unused_param_hook import DDPUnusedParamHook
from .dist_watchdog_hook import DistWatchdogHook

__all__ = [
    'AccumulationResumeHook', 'AtomicCheckpointHook', 'DDPUnusedParamHook',
    'DistWatchdogHook', 'use_atomic_checkpoints'
]
