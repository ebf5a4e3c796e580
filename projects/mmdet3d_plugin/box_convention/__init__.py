"""0.x checkpoints in mmdet3d 1.x's box convention, for
``tools/migrate_checkpoint.py`` and the Runner's load: the box map
(``boxes``), a checkpoint's convention from its meta (``convention``), a
0.x config's text read without running it (``old_config``), each head's
conversion (``centerpoint``, ``anchor3d``, ``detr``), the whole
conversion (``migrate``), the tool's flags and run (``tool``, which loads
torch only when it runs).
"""
