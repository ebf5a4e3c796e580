"""Files that are either complete or absent."""
from .atomic import (ATOMIC_BACKEND, AtomicLocalBackend, atomic_write,
                     remove_stale_temporaries)

__all__ = [
    'ATOMIC_BACKEND', 'AtomicLocalBackend', 'atomic_write',
    'remove_stale_temporaries'
]
