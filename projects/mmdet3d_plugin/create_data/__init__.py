"""Data preparation, the code behind ``tools/create_data.py``: the info
files and GT database of a nuScenes root, the products of mmdet3d's own
converter computed in parallel, resumable shards (``prepare``: the v2
infos of a sample in ``infos``, its GT objects in ``gt_database``, the
shards on disk in ``shards``, the worker processes in ``parallel``), that
converter itself run on any root (``converter``, ``--reference``) and the
comparison of the two's products (``compare``). The generated data
(``synthetic``) is prepared with it too."""
