"""What the rank runners share (``ddp_runner``, ``metric_wait_runner``,
their ranks forked by ``train_tool.fork_call``): each scenario's outcome
as ``OUT_DIR/<name>/rank<N>.json``. A rank ends with ``os._exit`` (the
kit's), so a failed DDP step or a timed-out group leaves no collective for
an interpreter teardown to wait for."""
import json
import os
from pathlib import Path
from typing import Callable, Iterable


def run_scenarios(out: Path, scenarios: Iterable[dict],
                  run_one: Callable[[dict], dict]) -> int:
    """Run each scenario in this process group, one after the other, and
    write its outcome (a JSON-able dict) for the test to read."""
    rank = int(os.environ['RANK'])
    for scenario in scenarios:
        result = run_one(scenario)
        folder = out / scenario['name']
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f'rank{rank}.json').write_text(json.dumps(result))
    return 0
