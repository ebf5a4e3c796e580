"""Stragglers: ``StragglerHook`` (``straggler_hook.py``) and its parts:
the clocks and sums of each rank (``timing``), the straggler and its fix
(``verdict``), the report (``report``, with its text)."""
