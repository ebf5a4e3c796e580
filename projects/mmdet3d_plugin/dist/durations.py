"""The one check of a duration argument (a timeout, an interval)."""
import math
import numbers


def positive_seconds(owner: str, name: str, value, example: str) -> float:
    """``value`` as float seconds, or a ``ValueError`` naming the fix.

    Args:
        owner (str): Who takes the argument, e.g. ``'DistWatchdogHook'``.
        name (str): The argument, e.g. ``'timeout'``.
        value: What was given.
        example (str): A valid setting for the message, e.g.
            ``'timeout=1800'``.

    Returns:
        float: The seconds.

    Raises:
        ValueError: Unless ``value`` is a positive, finite real number
            (``bool`` excluded).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or not value > 0:
        raise ValueError(
            f'{owner}: {name} must be a positive, finite number of seconds, '
            f'got {value!r} ({type(value).__name__}); e.g. {example}')
    return float(value)
