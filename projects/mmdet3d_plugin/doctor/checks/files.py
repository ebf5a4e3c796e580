"""Doctor check ``data.files``: a sample of the data files the config's
pipelines will open is whole (``tools/check_data.py``'s check, on
:data:`PER_KIND` files of each kind, read)."""
from ...data_check.check import check_files, sample_files
from ...data_check.data_files import data_files
from ..context import CheckResult, DoctorContext, failed, one_line, passed, \
    warned

#: Files of each kind (key frames, sweeps, GT-database objects, images)
#: the doctor reads.
PER_KIND = 50
#: Seed of the sample: the same files on every run of the same data.
SEED = 0
#: Threads that read them.
WORKERS = 4
#: Broken files named in the checklist line.
NAMED = 3


def _tool_command(ctx: DoctorContext) -> str:
    root = ctx.options.data_root
    return 'python tools/check_data.py ' + ctx.options.config + (
        f' --data-root {root}' if root else '')


def check_data_files(ctx: DoctorContext) -> CheckResult:
    """Read a deterministic sample of the files; fail naming the first
    broken ones, with ``tools/check_data.py`` as the fix."""
    try:
        files = data_files(ctx.cfg)
    except FileNotFoundError as exc:  # config.data_paths names it too
        return warned('data.files', one_line(f'skipped: {exc}'),
                      'fix config.data_paths first, then rerun')
    except ValueError as exc:
        return failed('data.files', one_line(str(exc)),
                      'fix the setting or info file the message names')
    if not files:
        return passed('data.files', 'the pipelines open no data file '
                      '(nothing to check)')
    sample = sample_files(files, per_kind=PER_KIND, seed=SEED)
    report = check_files(sample, read=True, workers=WORKERS)
    kinds = ', '.join(f'{n} {kind}' for kind, n in report.counts.items())
    if report.ok:
        return passed(
            'data.files', f'{report.files} of {len(files)} files read '
            f'({kinds}): none broken')
    named = '; '.join(f'{b.file.path} ({b.file.kind}, {b.file.owner()}): '
                      f'{b.problem}' for b in report.broken[:NAMED])
    more = len(report.broken) - NAMED
    return failed(
        'data.files', one_line(
            f'{len(report.broken)} of {report.files} sampled files broken: '
            f'{named}' + (f' (+{more} more)' if more > 0 else ''), 1000),
        f'`{_tool_command(ctx)}` lists every broken file of the '
        f'{len(files)}; replace or regenerate them (a generated root: '
        'tools/create_synthetic_nuscenes.py and tools/create_data.py)')
