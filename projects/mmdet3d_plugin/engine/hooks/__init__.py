from .accumulation_resume_hook import AccumulationResumeHook
from .atomic_checkpoint_hook import (AtomicCheckpointHook,
                                     use_atomic_checkpoints)
from .ddp_unused_param_hook import DDPUnusedParamHook

__all__ = [
    'AccumulationResumeHook', 'AtomicCheckpointHook', 'DDPUnusedParamHook',
    'use_atomic_checkpoints'
]
