"""Loading configs: presets, ``--cfg-options``, the data root, 0.x
translation (``legacy/``), a legacy ``plugin_dir``, the checkpoint hook."""
