"""The data check of ``tools/check_data.py`` and the doctor's
``data.files``: the info files read (``info_files``), every file a
config's pipelines will open, kind by kind (``data_files``), checked by
stat or by reading it, in threads (``check``), the table and the JSON
(``check_report``), the tool's flags and its run (``tool``, which loads
the config's stack when it runs). None of them imports torch, mmcv or
mmdet3d at import.

The training side calls::

    from projects.mmdet3d_plugin.data_check.data_files import data_files
    from projects.mmdet3d_plugin.data_check.check import (check_files,
                                                          sample_files)
    files = data_files(cfg)                 # cfg: the prepared Config
    report = check_files(sample_files(files, per_kind=100, seed=0))
    report.ok, report.broken[0].line(), report.exit_code
"""
