"""Unused parameters under DDP: ``DDPUnusedParamHook`` and what it runs on.

``DDPUnusedParamHook`` (``ddp_unused_param_hook.py``) marks which
parameters receive a gradient in its checked iterations (``marks``),
counts only those the loss reaches (``marks`` too), gathers the unused sets
of all ranks (``gather``) and keeps them (``summary``); ``advice`` turns
them into the report (``unused_params.json``) and the cheapest
``find_unused_parameters`` setting that is correct, ``table`` into the
log's table, and ``run_iter_patch`` retells DDP's error with names.
:func:`~projects.mmdet3d_plugin.cli.find_unused.find_unused_parameters`
runs the same check for a config in one process, before a multi-GPU job is
launched.
"""
