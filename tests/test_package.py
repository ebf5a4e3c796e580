"""Loading the plugin: registration, custom_imports, legacy plugin_dir.

What importing the package does is a fresh interpreter's (marker
``launch``: in the test process it is imported already); a legacy
``plugin_dir`` is imported by ``prepare_run`` in a process forked from
this one (the plugin folder's classes stay out of this process).
"""
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mmdet3d.registry import HOOKS

from projects.mmdet3d_plugin.cli.prepare import prepare_run

REPO = Path(__file__).resolve().parents[1]
REGISTERED = [
    ('DATASETS', 'SafeNuScenesDataset'),
    ('METRICS', 'SafeNuScenesMetric'),
    ('HOOKS', 'DDPUnusedParamHook'),
    ('HOOKS', 'StragglerHook'),
]


def _python(code, cwd=REPO, **env):
    return subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, 'PYTHONPATH': str(REPO), **env})


@pytest.mark.launch
def test_import_registers_into_mmdet3d():
    # launch: one fresh interpreter, nothing registered before the import
    result = _python(f"""
        import mmdet3d.registry as r
        names = {REGISTERED!r}
        assert all(getattr(r, reg).get(n) is None for reg, n in names)
        import projects.mmdet3d_plugin
        for reg, n in names:
            cls = getattr(r, reg).get(n)
            assert cls is not None and cls.__name__ == n, (reg, n, cls)
        print('ok')
    """)
    assert result.stdout.strip().endswith('ok'), result.stderr[-3000:]


@pytest.mark.launch
def test_import_has_no_side_effects_beyond_registration(tmp_path):
    # launch: the process state a fresh import leaves
    result = _python("""
        import multiprocessing as mp, os, torch
        before = set(os.listdir('.'))
        torch.set_num_threads(3)  # not the tests' 1, nor a core count
        threads = torch.get_num_threads()
        import projects.mmdet3d_plugin
        assert mp.get_start_method(allow_none=True) is None
        assert set(os.listdir('.')) == before
        assert torch.get_num_threads() == threads
        assert not torch.distributed.is_initialized()
        print('ok')
    """, cwd=tmp_path)
    assert result.stdout.strip().endswith('ok'), result.stderr[-3000:]


@pytest.mark.launch
def test_custom_imports_config_registers(tmp_path):
    # launch: custom_imports in an interpreter without the plugin
    cfg = tmp_path / 'cfg.py'
    cfg.write_text(
        "custom_imports = dict(imports=['projects.mmdet3d_plugin'], "
        'allow_failed_imports=False)\n'
        "train_dataloader = dict(dataset=dict(type='SafeNuScenesDataset'))\n")
    result = _python(f"""
        from mmengine.config import Config
        from mmdet3d.registry import DATASETS, HOOKS
        cfg = Config.fromfile({str(cfg)!r})
        assert DATASETS.get(cfg.train_dataloader.dataset.type) is not None
        assert HOOKS.get('DDPUnusedParamHook') is not None
        print('ok')
    """)
    assert result.stdout.strip().endswith('ok'), result.stderr[-3000:]


def _prepare_legacy(cwd, config, found) -> None:
    """``prepare_run`` of ``config`` from ``cwd``, in a forked process:
    puts whether the plugin folder's hook was registered."""
    os.chdir(cwd)
    sys.path.insert(0, '.')
    prepare_run(config, 'train', work_dir='work')
    found.put(HOOKS.get('LegacyPluginHook') is not None)


def test_legacy_plugin_dir_is_imported(tmp_path):
    # A UniAD-style project: its own plugin folder, named by plugin_dir.
    plugin = tmp_path / 'projects_x' / 'my_plugin'
    plugin.mkdir(parents=True)
    (tmp_path / 'projects_x' / '__init__.py').write_text('')
    (plugin / '__init__.py').write_text(textwrap.dedent("""
        from mmengine.hooks import Hook
        from mmdet3d.registry import HOOKS

        @HOOKS.register_module()
        class LegacyPluginHook(Hook):
            pass
    """))
    cfg = tmp_path / 'legacy.py'
    cfg.write_text("plugin = True\nplugin_dir = 'projects_x/my_plugin/'\n")
    # library: prepare_run, forked (the folder's hook stays out of here)
    ctx = multiprocessing.get_context('fork')
    found = ctx.SimpleQueue()
    proc = ctx.Process(target=_prepare_legacy,
                       args=(tmp_path, str(cfg), found))
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == 0
    assert found.get() is True


def test_legacy_plugin_without_dir_is_refused(tmp_path):
    cfg = tmp_path / 'legacy.py'
    cfg.write_text('plugin = True\n')
    with pytest.raises(ValueError, match='plugin_dir'):
        prepare_run(str(cfg), 'train', work_dir=str(tmp_path / 'work'))
