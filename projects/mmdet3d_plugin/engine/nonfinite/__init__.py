"""Non-finite steps skipped on every rank (``guard``: the decision, the
skipped update, the buffers put back), named down to the sample and the
module (``records``, ``first_module``), and what a config gets for it
(``run_config``). The hook that runs them is
``engine/hooks/nonfinite_guard_hook.py``."""
