"""Broken files met by ``BadSampleHook`` in ``tools/train.py``, on copies
of the generated data, each run in ranks forked from the test process
(the hook is the subject, not the launcher):

* the small CenterPoint config on 2 gloo ranks as ``tools/dist_train.sh``
  runs them (2 workers each), 12 frames, every sweep loaded, one key-frame
  file truncated mid-point and one sweep file deleted: two passes over the
  data, rc 0, both files in ``bad_samples.json`` with their tokens;
* half the key-frame files deleted (one process): the run stops before its
  first iteration with one line naming the missing files and the fix.

The full-size pillar02 config with broken files:
``tests/shipped_configs/test_pillar02_faults.py``."""
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.helpers.broken_files import (key_frame, owners, train_infos,
                                        truncate)
from tests.helpers.train_tool import fork_dist_train, fork_train

REPO = Path(__file__).resolve().parents[3]
SMALL = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')


def _small_config(path: Path, iters: int, frames: int = 20) -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(SMALL)!r}]
        train_dataloader = dict(num_workers=2,
                                dataset=dict(indices={frames}))
        train_cfg = dict(max_iters={iters}, val_interval={iters})
        default_hooks = dict(logger=dict(interval=1),
                             checkpoint=dict(interval={iters}))
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        """))
    return path


@pytest.mark.slow
def test_two_ranks_train_through_a_truncated_key_frame_and_a_lost_sweep(
        nus_synthetic, tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(nus_synthetic, root)
    info = train_infos(root)
    truncated = key_frame(root, info[3])
    truncate(truncated)
    sweep = root / 'sweeps' / 'LIDAR_TOP' / Path(
        info[11]['lidar_sweeps'][0]['lidar_points']['lidar_path']).name
    sweep.unlink()
    # The first 12 frames (the broken ones are the 4th and the 12th), 2
    # ranks of 2: 3 iterations a pass, two passes; every sweep of a frame
    # loaded (10 of 10), so the deleted one is met.
    config = _small_config(tmp_path / 'small.py', iters=6, frames=12)
    proc = fork_dist_train(  # hook: files replaced on both ranks
        config, tmp_path / 'work', '--data-root', root, '--cfg-options',
        'train_dataloader.dataset.pipeline.1.sweeps_num=10')
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-6000:]
    entries = json.loads((tmp_path / 'work' / 'bad_samples.json').read_text())
    named = {e['file']: e for e in entries}
    # A file read by several frames is named with the first one met.
    assert named[str(truncated)]['token'] in owners(info, truncated)
    assert 'cannot reshape' in named[str(truncated)]['error']
    assert named[str(sweep)]['token'] in owners(info, sweep)
    assert named[str(sweep)]['error'].startswith('FileNotFoundError')
    # Each trained twice (the workers may load some once more ahead).
    assert named[str(truncated)]['count'] >= 2
    assert out.count('bad sample replaced: ') == len(entries)
    assert 'Iter(train) [6/6]' in out


def test_half_the_key_frames_missing_stops_before_training(
        nus_synthetic, tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(nus_synthetic, root)
    info = train_infos(root)
    for idx in sorted(info)[::2]:
        key_frame(root, info[idx]).unlink()
    proc = fork_train(  # hook: its check before the first iteration
        _small_config(tmp_path / 'small.py', iters=40), tmp_path / 'work',
        '--data-root', root)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0
    # The config's 20 frames, every other one deleted.
    [line] = [ln for ln in out.splitlines() if 'files looked at' in ln]
    assert line.startswith('error: BadSampleHook: 10 of 20 key-frame files '
                           'looked at are missing'), out[-3000:]
    assert 'tools/check_data.py' in line
    assert 'Traceback' not in out and 'Iter(train)' not in out
