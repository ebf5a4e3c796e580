"""The index of the plugin's registered hooks. Each lives in the folder of
its capability, beside its machinery (``engine/<capability>/``); importing
this module registers them all."""
from ..activation_checkpointing.gradient_coverage_hook import \
    GradientCoverageHook
from ..atomic_checkpoint.atomic_checkpoint_hook import AtomicCheckpointHook
from ..bad_samples.bad_sample_hook import BadSampleHook
from ..nonfinite.nonfinite_guard_hook import NonFiniteGuardHook
from ..preemption.preemption_hook import PreemptionHook
from ..resume.accumulation_resume_hook import AccumulationResumeHook
from ..resume.data_position_hook import DataPositionHook
from ..straggler.straggler_hook import StragglerHook
from ..unused_params.ddp_unused_param_hook import DDPUnusedParamHook
from ..watchdog.dist_watchdog_hook import DistWatchdogHook

__all__ = [
    'AccumulationResumeHook', 'AtomicCheckpointHook', 'BadSampleHook',
    'DDPUnusedParamHook', 'DataPositionHook', 'DistWatchdogHook',
    'GradientCoverageHook', 'NonFiniteGuardHook', 'PreemptionHook',
    'StragglerHook'
]
