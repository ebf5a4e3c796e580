"""The plugin's own exceptions, in one module: each class says what raises
it; the tools print them as one line (``cli.run_tool``), and the cause
table (``causes``) explains them in the failure report by their names."""


class AmpUnsupportedError(RuntimeError):
    """The config's mixed precision cannot run on this machine (raised by
    ``engine.amp.check_amp_supported``; the tools print it as one line)."""


class NonFiniteStepsError(RuntimeError):
    """Too many non-finite steps in a row or in all (raised on every rank
    by ``NonFiniteGuardHook``; the records are in ``nonfinite.json``)."""

    #: Raised on every rank at the same point (``dist/teardown.py`` then
    #: ends the groups in order).
    every_rank = True


class NonFiniteStateError(RuntimeError):
    """The weights or optimizer state hold NaN / Inf at a checkpoint, which
    is not written (raised on every rank by ``AtomicCheckpointHook``)."""

    #: As :attr:`NonFiniteStepsError.every_rank`.
    every_rank = True


class BadSampleError(RuntimeError):
    """A sample could not be loaded: the message names the file, the sample
    and the error (raised where samples are not replaced, and when no
    replacement loads either; ``engine/bad_samples``)."""


class BadSamplesError(RuntimeError):
    """More broken samples than the run tolerates, or a data root that is
    mostly missing (``BadSampleHook``; the records are in
    ``bad_samples.json``)."""


class GradientCoverageError(RuntimeError):
    """A trainable parameter inside an activation-checkpointed module got no
    gradient in the run's first backward (raised on every rank by
    ``GradientCoverageHook``; ``engine/activation_checkpointing``)."""

    #: As :attr:`NonFiniteStepsError.every_rank`.
    every_rank = True
