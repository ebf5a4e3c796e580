"""The one quiet mmengine logger of the tools that print a report.

The doctor, ``tools/check_data.py`` and ``tools/profile_pipeline.py``
print a checklist or a table; the INFO lines that loading a config and
building a dataset log (the presets applied, the dataset's and the GT
database's tables) would bury it. :func:`quiet_logger` makes a fresh
mmengine logger at a higher level the current one for a block, and puts
it back to INFO afterwards, as mmengine's default logger is, so that the
caller's later logs are not swallowed.
"""
import contextlib
import logging
import os
import time
from typing import Iterator, Optional

from mmengine.logging import MMLogger


@contextlib.contextmanager
def quiet_logger(prefix: str,
                 level: str = 'ERROR',
                 quiet: bool = True) -> Iterator[Optional[MMLogger]]:
    """Inside the block, the current mmengine logger prints ``level`` and
    above only.

    Args:
        prefix (str): Start of the logger's unique name (the tool's).
        level (str): The lowest level printed. Defaults to 'ERROR'.
        quiet (bool): False leaves the current logger as it is (a tool's
            ``--verbose``). Defaults to True.

    Yields:
        MMLogger | None: The quiet logger; None when not ``quiet``.

    Examples:
        >>> with quiet_logger('check_data', level='WARNING'):
        ...     cfg, _ = read_config(config)
    """
    if not quiet:
        yield None
        return
    logger = MMLogger.get_instance(
        f'{prefix}_{os.getpid()}_{time.monotonic_ns()}', log_level=level)
    try:
        yield logger
    finally:
        logger.setLevel(logging.INFO)
        for handler in logger.handlers:
            handler.setLevel(logging.INFO)
