"""Exact resume, in one place: train loops that continue inside an epoch
at the sample they stopped at (``loops``, ``position``,
``data_position_hook``), with the samples' and the model's random state;
samples whose order and augmentation are functions of ``(seed, epoch,
position)`` (``sample_key``, ``sampler``, ``seeded_items``,
``dataloader``, ``gt_database``), so a resumed run loads exactly the samples
the interrupted run would have without loading the ones it skips;
epoch-triggered hooks done again on resume (``hook_replay``); the restart
bookkeeping (``restart``: the attempt, the progress file, a checkpoint's
seed); and what a config gets for it (``run_config``: the loops,
``PreemptionHook``, timed checkpoints). The hooks ``AccumulationResumeHook``
and ``PreemptionHook`` are in ``engine/hooks``, the process groups of a
torchrun restart in ``compat/restart_store.py``."""

# The modules that register classes (loops, hook, sampler).
from . import data_position_hook, loops, sampler  # noqa: F401
