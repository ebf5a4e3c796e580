"""mmdet3d 0.x configs translated to 1.x."""
from .translator import format_migration_table, translate_legacy

__all__ = ['format_migration_table', 'translate_legacy']
