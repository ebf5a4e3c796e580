"""Non-finite steps skipped on every rank: ``NonFiniteGuardHook``
(``nonfinite_guard_hook.py``) runs the guard (``guard``: the decision, the
skipped update, the buffers put back) and names each skipped step down to
the sample and the module (``records``, ``first_module``; each batch's
dataset indices from the sampler's order: ``batch_indices``).
``tools/train.py`` adds the hook to every training run
(``engine/run_defaults.py``); a
checkpoint whose state holds NaN or Inf is refused by
``AtomicCheckpointHook`` (``engine/atomic_checkpoint``)."""
