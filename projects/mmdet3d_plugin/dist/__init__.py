"""The distributed toolkit every part shares: side groups, free ports, the
seconds validator, declared long phases and the timeout budget."""
from .budget import (PROCESS_GROUP_DEFAULT_TIMEOUT, timeout_problems,
                     watchdog_group_timeout)
from .groups import side_group
from .phase import Phase, current_phase, long_phase
from .ports import free_port
from .seconds import positive_seconds

__all__ = [
    'PROCESS_GROUP_DEFAULT_TIMEOUT', 'Phase', 'current_phase', 'free_port',
    'long_phase', 'positive_seconds', 'side_group', 'timeout_problems',
    'watchdog_group_timeout'
]
