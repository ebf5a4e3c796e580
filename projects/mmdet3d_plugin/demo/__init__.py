"""The demo of ``tools/quickstart.py`` (``make demo``): generated data, a
2-process training, evaluation, and the report with its bird's-eye view."""
from .bev_figure import draw_bev, predict_frame
from .quickstart import DEMO_ITERS, derived_config, run_quickstart

__all__ = [
    'DEMO_ITERS', 'derived_config', 'draw_bev', 'predict_frame',
    'run_quickstart'
]
