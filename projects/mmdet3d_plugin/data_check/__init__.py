"""The data check of ``tools/check_data.py`` and the doctor's
``data.files``: every file a config's pipelines will open (``files``),
checked by stat or by reading it, in threads (``check``), the table and
the JSON (``report``), the tool's flags (``parser``) and its run
(``tool``, which loads the config's stack). ``files``, ``check`` and
``report`` import neither torch, mmcv nor mmdet3d.

The training side calls::

    from projects.mmdet3d_plugin.data_check.files import data_files
    from projects.mmdet3d_plugin.data_check.check import (check_files,
                                                          sample_files)
    files = data_files(cfg)                 # cfg: the prepared Config
    report = check_files(sample_files(files, per_kind=100, seed=0))
    report.ok, report.broken[0].line(), report.exit_code
"""
