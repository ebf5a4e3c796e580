"""Exact resume, in one place: train loops that continue inside an epoch
at the sample they stopped at (``loops``, ``position``,
``data_position_hook``), with the samples' and the model's random state;
samples whose order and augmentation are functions of ``(seed, epoch,
position)`` (``sample_key``, ``sampler``, ``seeded_items``,
``gt_database``), so a resumed run loads exactly the samples the
interrupted run would have without loading the ones it skips;
epoch-triggered hooks done again on resume (``hook_replay``); the
gradients of an unfinished accumulation cycle kept in checkpoints
(``accumulation_resume_hook``: ``AccumulationResumeHook``, which
``PluginRunner`` adds); the restart bookkeeping (``restart``: the attempt,
the progress file, a checkpoint's seed); and what a config gets for it
(``loops.use_exact_resume``, a row of ``engine/run_defaults.py``).
Preemption is ``engine/preemption``, atomic and timed checkpoints
``engine/atomic_checkpoint``, the process groups of a torchrun restart
``compat/restart_store.py``."""

# The modules that register classes (loops, hook, sampler).
from . import data_position_hook, loops, sampler  # noqa: F401
