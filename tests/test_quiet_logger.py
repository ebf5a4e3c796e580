"""The one quiet logger of the doctor, the data check and the profiler:
quiet inside its block, INFO again after it, nothing changed when not
quiet."""
import logging

import pytest
from mmengine.logging import MMLogger

from projects.mmdet3d_plugin.quiet_logger import quiet_logger


@pytest.mark.parametrize('level', ['WARNING', 'ERROR'])
def test_quiet_inside_the_block_and_info_after(level):
    # mmengine's logger filters in its console handler.
    with quiet_logger('test_quiet_logger', level=level) as logger:
        assert MMLogger.get_current_instance() is logger
        assert logger.handlers
        assert [h.level for h in logger.handlers] == \
            [getattr(logging, level)] * len(logger.handlers)
    assert logger.isEnabledFor(logging.INFO)
    assert [h.level for h in logger.handlers] == \
        [logging.INFO] * len(logger.handlers)


def test_not_quiet_leaves_the_current_logger():
    before = MMLogger.get_current_instance()
    with quiet_logger('test_quiet_logger', quiet=False) as logger:
        assert logger is None
        assert MMLogger.get_current_instance() is before
