# The config rewrite that selects AtomicCheckpointHook lives in config/; its
# name stays importable here, where it was documented.
from ...config.checkpoint_hook import use_atomic_checkpoints
from .accumulation_resume_hook import AccumulationResumeHook
from .atomic_checkpoint_hook import AtomicCheckpointHook
from .bad_sample_hook import BadSampleHook
from .ddp_unused_param_hook import DDPUnusedParamHook
from .dist_watchdog_hook import DistWatchdogHook
from .nonfinite_guard_hook import NonFiniteGuardHook
from .preemption_hook import PreemptionHook
from .straggler_hook import StragglerHook

__all__ = [
    'AccumulationResumeHook', 'AtomicCheckpointHook', 'BadSampleHook',
    'DDPUnusedParamHook', 'DistWatchdogHook', 'NonFiniteGuardHook', 'PreemptionHook',
    'StragglerHook',
    'use_atomic_checkpoints'
]
