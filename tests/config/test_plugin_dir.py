"""A UniAD / BEVFormer repository's own ``projects/mmdet3d_plugin/``.

Its configs say ``plugin = True, plugin_dir = 'projects/mmdet3d_plugin/'``:
the module name of this package. Run from that repository, our tools stop
with one error naming both folders instead of importing one of the two;
``plugin_dir`` naming this package's own folder is this package.

``tools/train.py`` started from their repository is a real launch (marker
``launch``: which ``projects`` package the script imports is decided by its
start-up there). The doctor's check runs in this process, and the renamed
plugin's import from their repository in a process forked from this one
(their folder's classes stay out of this process), each from their
repository as working directory.
"""
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from mmengine.config import Config
from mmengine.logging import MMLogger

from projects.mmdet3d_plugin.config.plugin_dir import (
    PluginDirCollisionError, import_plugins, plugin_dir_collision)
from projects.mmdet3d_plugin.doctor.tool import main as doctor_main
from tests.helpers.train_tool import train_in_process, warm

REPO = Path(__file__).resolve().parents[2]
OURS = REPO / 'projects' / 'mmdet3d_plugin'
BASE = REPO / 'configs' / 'centerpoint' / 'centerpoint_pillar_synthetic.py'
HOOK = textwrap.dedent("""
    from mmengine.hooks import Hook
    from mmdet3d.registry import HOOKS


    @HOOKS.register_module()
    class TheirPluginHook(Hook):
        pass
""")


def _their_repo(root: Path, plugin_dir: str = 'projects/mmdet3d_plugin/'):
    """A UniAD-like repository: ``projects/`` (a regular package holding
    ``configs/``) and a plugin folder registering a hook."""
    (root / 'projects' / 'configs').mkdir(parents=True)
    (root / 'projects' / '__init__.py').write_text('')
    plugin = root / plugin_dir
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / '__init__.py').write_text(HOOK)
    config = root / 'projects' / 'configs' / 'theirs.py'
    config.write_text(f'_base_ = [{str(BASE)!r}]\n'
                      'plugin = True\n'
                      f'plugin_dir = {plugin_dir!r}\n')
    return config.relative_to(root)


def _tool(tool, *args, cwd):
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'MMDET3D_PLUGIN_DEBUG')}
    return subprocess.run(
        [sys.executable, str(REPO / 'tools' / tool), *map(str, args)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _train_in(cwd: Path, out: Path, config: Path, work: Path,
              *flags) -> None:
    """The forked process of :func:`_train_from`."""
    os.chdir(cwd)
    with open(out, 'w') as f, contextlib.redirect_stdout(f), \
            contextlib.redirect_stderr(f):
        # The current logger (print_log's) writes here too.
        MMLogger.get_instance(f'their_repo_{uuid.uuid4().hex[:8]}')
        code = train_in_process(config, work, *flags)
    sys.exit(code)


def _train_from(cwd: Path, config: Path, work: Path, *flags):
    """``tools/train.py CONFIG --work-dir WORK FLAGS`` from ``cwd`` (their
    repository) in a process forked from this one; its output and exit
    status. (The kit's forked ranks start in this repository.)"""
    warm()
    out = work.parent / 'train.out'
    proc = multiprocessing.get_context('fork').Process(
        target=_train_in, args=(cwd, out, config, work, *flags))
    proc.start()
    proc.join(timeout=600)
    return out.read_text(), proc.exitcode


@pytest.mark.launch
def test_train_stops_with_one_error_naming_both_folders(tmp_path):
    repo = tmp_path / 'uniad'
    config = _their_repo(repo)
    work = tmp_path / 'work'
    # launch: the script started from their repository
    result = _tool('train.py', config, '--work-dir', work, '--cfg-options',
                   'train_cfg.max_iters=1', cwd=repo)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    errors = [line for line in result.stderr.splitlines()
              if line.startswith('error:')]
    assert len(errors) == 1, out[-3000:]
    error = errors[0]
    assert error.startswith(
        "error: config: plugin_dir='projects/mmdet3d_plugin/' is "
        f"{(repo / 'projects' / 'mmdet3d_plugin').resolve()}, a different "
        f'folder with the same module name as this package ({OURS})'), error
    assert "set plugin_dir='uniad_plugin/'" in error
    assert 'Traceback' not in out
    # Stopped while loading the config: no Runner, work dir or dataset.
    assert not work.exists()
    assert 'SafeNuScenesDataset' not in out
    assert not (repo / 'work_dirs').exists()


def test_doctor_fails_config_plugin_with_the_fix(tmp_path, monkeypatch,
                                                 capsys):
    repo = tmp_path / 'uniad'
    config = _their_repo(repo)
    report = tmp_path / 'doctor.json'
    monkeypatch.chdir(repo)
    # library: the doctor's checks, from their repository
    assert doctor_main([str(config), '--iters', '1', '--json',
                        str(report)]) == 1
    printed = capsys.readouterr()
    assert 'Traceback' not in printed.out + printed.err
    lines = {line['check']: line for line in json.loads(report.read_text())}
    assert lines['config.load']['status'] == 'pass', lines['config.load']
    plugin = lines['config.plugin']
    assert plugin['status'] == 'fail', plugin
    assert str((repo / 'projects' / 'mmdet3d_plugin').resolve()) in \
        plugin['detail']
    assert f'same module name as this package ({OURS})' in plugin['detail']
    assert "plugin_dir='uniad_plugin/'" in plugin['fix']
    assert '[FAIL] config.plugin' in printed.out


def test_renamed_plugin_is_imported_from_their_repository(tmp_path):
    # The fix the error gives: a top-level module name of its own.
    repo = tmp_path / 'uniad'
    config = _their_repo(repo, plugin_dir='uniad_plugin/')
    # library: the config's plugin import, forked, from their repository
    out, code = _train_from(repo, config, tmp_path / 'work', '--cfg-options',
                            'train_cfg.max_iters=1')
    assert code == 1, out[-3000:]
    assert "imported plugin_dir 'uniad_plugin/' from " \
        f"{(repo / 'uniad_plugin').resolve()}" in out, out[-3000:]
    # It goes on to the data, which this repository does not have: the
    # checks before building stop on the evaluators' missing data root.
    assert 'data/nuscenes_synthetic/, which does not exist' in out, \
        out[-3000:]


def _cfg(plugin_dir):
    return Config(dict(plugin=True, plugin_dir=plugin_dir))


@pytest.mark.parametrize('plugin_dir', [
    'projects/mmdet3d_plugin/', 'projects/mmdet3d_plugin',
    str(OURS) + '/'
])
def test_our_own_folder_is_this_package(plugin_dir, monkeypatch):
    monkeypatch.chdir(REPO)
    modules = set(sys.modules)
    path = list(sys.path)
    assert plugin_dir_collision(_cfg(plugin_dir)) is None
    import_plugins(_cfg(plugin_dir))
    assert set(sys.modules) == modules
    assert sys.path == path


def test_collision_is_found_without_importing(tmp_path, monkeypatch):
    _their_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    modules = set(sys.modules)
    collision = plugin_dir_collision(_cfg('projects/mmdet3d_plugin/'))
    assert isinstance(collision, PluginDirCollisionError)
    assert str(tmp_path.resolve() / 'projects' / 'mmdet3d_plugin') in \
        collision.detail
    with pytest.raises(PluginDirCollisionError, match='same module name'):
        import_plugins(_cfg('projects/mmdet3d_plugin/'))
    assert set(sys.modules) == modules


def test_their_projects_package_collides_too(tmp_path, monkeypatch):
    # `projects` is this package's parent: projects.other_plugin would be
    # looked up in our folder, not theirs.
    _their_repo(tmp_path, plugin_dir='projects/other_plugin/')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PluginDirCollisionError) as info:
        import_plugins(_cfg('projects/other_plugin/'))
    message = str(info.value)
    assert message.startswith(
        "config: plugin_dir='projects/other_plugin/' is "
        f"{tmp_path.resolve() / 'projects' / 'other_plugin'}, but its parent "
        f'package projects is imported from {OURS.parent}')
    assert 'other_plugin' not in ' '.join(sys.modules)


def test_plugin_dir_outside_the_working_directory_is_refused(tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match='module name'):
        import_plugins(_cfg('../elsewhere/plugin/'))
