"""Why a run failed, and what a failed or hung run leaves behind.

Each rank records its uncaught exception in torch elastic's error file
(``record.record_errors``, written by ``error_files.RankErrorHandler``)
and its host, pid and memory in ``rank_info.json``; after a failed
launch, ``report.report_failed_run`` reads them, tells causes from
victims, shows identical errors once, looks the cause up in the cause
table (``causes``) and writes ``failure_report.json``. The same pieces
(error files, frames and stacks, the cause table, the unused-parameter
report) serve the engine's hooks (the watchdog, ``DDPUnusedParamHook``)
and the tools' one-line errors.

Nothing here imports mmcv or mmdet3d: the report explains a run whose
install is broken.
"""
