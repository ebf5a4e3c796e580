"""The root-cause report of a failed distributed run: collected, saved,
printed.

After a failed launch, :func:`report_failed_run` collects what each rank
left (:mod:`.collect`), builds the report (:func:`~.build.build_report`),
saves it as ``failure_report.json`` in the work dir (:func:`write_report`)
and returns the text to print (:func:`~.text.format_report`).
"""
import json
import os.path as osp
from typing import Any, Dict, Optional, Tuple

from ..constants import FAILURE_REPORT_NAME
from ..fileio.atomic import atomic_write
from .build import build_report
from .collect import collect_failures
from .text import format_report


def write_report(report: Dict[str, Any], work_dir: str) -> str:
    """Write ``report`` as ``<work_dir>/failure_report.json``.

    Args:
        report (dict): From :func:`build_report`.
        work_dir (str): The run's work dir (created if missing).

    Returns:
        str: The file written.
    """
    path = osp.join(work_dir, FAILURE_REPORT_NAME)
    atomic_write(json.dumps(report, indent=2), path)
    return path


def report_failed_run(log_dir: str,
                      exit_code: Optional[int] = None,
                      work_dir: Optional[str] = None) -> Tuple[str, str]:
    """Collect, explain, save and format the failure of one launch.

    Args:
        log_dir (str): The launch's log folder (error files).
        exit_code (int, optional): The launcher's exit status.
        work_dir (str, optional): Where to write the JSON when no rank
            recorded its work dir; the log folder when None.

    Returns:
        tuple[str, str]: The printed report and the JSON file written.
    """
    failures = collect_failures(log_dir)
    sizes = [f.info.get('world_size') for f in failures
             if f.info.get('world_size')]
    report = build_report(failures, exit_code=exit_code, log_dir=log_dir,
                          world_size=max(sizes) if sizes else None)
    target = report['work_dir'] or work_dir or log_dir
    try:
        path = write_report(report, target)
    except OSError:
        path = write_report(report, log_dir)
    return format_report(report, path), path
