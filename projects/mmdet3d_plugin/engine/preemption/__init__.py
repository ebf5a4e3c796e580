"""Preemption that loses nothing: ``PreemptionHook``
(``preemption_hook.py``) stops every rank after the same iteration on a
preemption signal, saves that iteration's checkpoint through the run's
``AtomicCheckpointHook`` (``engine/atomic_checkpoint``) and exits with
status 85, which ``tools/slurm_train.sh`` answers by requeueing the job.
The restart that follows is exact resume's (``engine/resume/restart.py``).
"""
