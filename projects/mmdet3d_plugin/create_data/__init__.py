"""Data preparation: the info files and GT database of a nuScenes root,
written by mmdet3d's own converter run on any root (``converter``), the
code behind ``tools/create_data.py``. The generated data (``synthetic``)
runs it on its roots too."""
