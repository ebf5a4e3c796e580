"""What a work dir's runs logged, read back for comparisons."""
import json
from pathlib import Path


def records(work: Path) -> dict:
    """``{iter: scalars record}`` of the training iterations over every
    run folder of ``work`` (each run's ``vis_data/scalars.json``), later
    runs last: an iteration a resumed run redid has the resumed run's
    record."""
    found = {}
    for run in sorted(p for p in work.iterdir()
                      if (p / 'vis_data' / 'scalars.json').is_file()):
        for line in (run / 'vis_data' / 'scalars.json').read_text(
                ).splitlines():
            rec = json.loads(line)
            if 'loss' in rec:
                found[rec['iter']] = rec
    return found


def losses(work: Path) -> dict:
    """``{iter: loss}`` of :func:`records`."""
    return {i: rec['loss'] for i, rec in records(work).items()}
