from .atomic_checkpoint_hook import AtomicCheckpointHook
from .ddp_unused_param_hook import DDPUnusedParamHook

__all__ = ['AtomicCheckpointHook', 'DDPUnusedParamHook']
