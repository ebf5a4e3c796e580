"""What the rank runners share: each scenario's outcome as
``OUT_DIR/<name>/rank<N>.json``, and an exit that skips the teardown."""
import json
import os
import sys
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


def exit_without_teardown(code: int) -> None:
    """Flush and exit now: a failed DDP step or a timed-out group leaves
    collectives pending that the interpreter teardown would wait for."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
