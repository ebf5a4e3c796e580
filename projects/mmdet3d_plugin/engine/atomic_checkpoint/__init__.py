"""Atomic checkpoints, all in ``atomic_checkpoint_hook``:
``AtomicCheckpointHook``, whose files survive a kill at any moment, that
also saves every N minutes and never writes a state holding NaN or Inf,
and the config change that makes it a run's checkpoint hook
(``atomic_checkpoint_hook.use_atomic_checkpoints``, and
``atomic_checkpoint_hook.set_checkpoint_minutes`` for
``--checkpoint-minutes``). ``PreemptionHook`` saves through it
(``engine/preemption``)."""
