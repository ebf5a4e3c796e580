"""0.x checkpoints of the shipped full-size configs
(``tests/helpers/old_checkpoints.py``) converted against those configs by
``tools/migrate_checkpoint.py``'s conversion: the result loads into the
1.x model the config builds, every key and shape (``strict=True``), and
only the head's box layers changed. (``benchmarks/bench_migrate_checkpoint.py``
times it.)"""
import copy

import pytest
import torch
from mmdet3d.registry import MODELS
from mmengine.registry import init_default_scope

from projects.mmdet3d_plugin.box_convention.migrate import migrate_checkpoint
from tests.helpers.model_steps import CONFIGS, REPO_ROOT, load
from tests.helpers.old_checkpoints import old_checkpoint

pytestmark = pytest.mark.full_size


@pytest.mark.parametrize('name, changed', [
    ('voxel0075', 24), ('pillar02', 24), ('voxelnet_pillar02', 6)])
def test_converted_checkpoint_loads_into_the_1x_model(name, changed,
                                                      tmp_path):
    src, out = tmp_path / 'old.pth', tmp_path / 'new.pth'
    checkpoint = old_checkpoint(name)
    torch.save(checkpoint, src)
    config = str(REPO_ROOT / CONFIGS[name])
    options = None
    if name == 'voxelnet_pillar02':
        # The lines the tool asks for (the shipped -0.7854 is refused).
        fitting = tmp_path / 'voxelnet_for_0x.py'
        fitting.write_text(f"_base_ = ['{config}']\nmodel = dict(bbox_head="
                           'dict(dir_offset=0.7853963267948966))\n')
        config, options = str(fitting), {
            'model.bbox_head.dir_offset': 0.7853963267948966}
    migration = migrate_checkpoint(str(src), str(out), config=config)
    assert migration.written and len(migration.rows) == changed
    init_default_scope('mmdet3d')
    model = MODELS.build(copy.deepcopy(load(name, options).model))
    converted = torch.load(out)['state_dict']
    model.load_state_dict(converted, strict=True)
    old = checkpoint['state_dict']
    differ = sorted(k for k in old if not torch.equal(old[k], converted[k]))
    assert differ == sorted(key for key, _ in migration.rows)
