"""mmdet3d's ``DisableObjectSampleHook(disable_after_epoch=0)`` on the
shipped full-size pillar02 config (CBGS around the dataset, the
``FastObjectSample`` of its GT database), generated data, one iteration
in 2 gloo ranks forked from the test process (``fork_dist_train``: each
runs ``tools/train.py --launcher pytorch`` as ``tools/dist_train.sh``'s
ranks do), the DataLoader's fork worker included: the hook finds the
ObjectSample one level under ``CBGSDataset`` and turns it off before the
first batch is loaded. (One process: ``test_upstream_hooks.py``'s toy
runs of ``tools/train.py``.)"""
import re
import textwrap
from pathlib import Path

import pytest

from tests.helpers.train_tool import fork_dist_train

REPO = Path(__file__).resolve().parents[3]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')


def _config(path: Path) -> Path:
    path.write_text(textwrap.dedent(f"""\
        _base_ = [{str(PILLAR02)!r}]
        custom_imports = dict(
            imports=['projects.mmdet3d_plugin', 'tests.helpers.hook_toys'],
            allow_failed_imports=False)
        custom_hooks = [
            dict(type='DisableObjectSampleHook', disable_after_epoch=0),
            dict(type='ObjectSampleStateHook'),
            dict(type='StopAfterHook', after_iter=1, exit_process=True),
        ]
        train_dataloader = dict(batch_size=1, num_workers=1)
        default_hooks = dict(logger=dict(interval=1))
        val_cfg = None
        val_dataloader = None
        val_evaluator = None
        """))
    return path


@pytest.mark.slow
@pytest.mark.full_size
def test_object_sample_off_from_the_first_batch(nus_synthetic, tmp_path):
    config = _config(tmp_path / 'pillar02_disable.py')
    # hook: DisableObjectSampleHook under CBGS, in a rank's DataLoader.
    proc = fork_dist_train(config, tmp_path / 'work', '--data-root',
                           nus_synthetic)
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out[-6000:]
    assert 'CBGSDataset' in out and 'FastObjectSample' in out
    disabled = out.index('Disable ObjectSample')
    state = out.index('ObjectSample disabled before iteration 1: [True]')
    first = re.search(r'Epoch\(train\) +\[1\]\[ *1/', out)
    assert first and disabled < state < first.start(), out[-6000:]
    assert 'gloo process group on CPU: rank 0 of 2' in out, out[-6000:]
