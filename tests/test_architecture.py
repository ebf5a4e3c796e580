"""The package's layout: layers without cycles (import-linter's contracts in
``.importlinter``), shims of earlier import paths outside them, small
files, no test-only helper shipped."""
import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / 'projects' / 'mmdet3d_plugin'
LINT_IMPORTS = Path(sys.executable).with_name('lint-imports')
MAX_LINES = 600


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), '--config', '.importlinter', '--no-cache'],
        cwd=cwd, capture_output=True, text=True, timeout=120)


def test_layers_contract_is_kept():
    proc = lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert 'Contracts: 2 kept, 0 broken.' in proc.stdout


@pytest.mark.parametrize('where, planted, message', [
    ('config/data_root.py', 'from ..engine.runner import PluginRunner',
     'projects.mmdet3d_plugin.config is not allowed to import\n'
     'projects.mmdet3d_plugin.engine'),
    ('compat/inventory.py', 'from ..datasets import SafeNuScenesDataset',
     'projects.mmdet3d_plugin.compat is not allowed to import\n'
     'projects.mmdet3d_plugin.datasets'),
    ('synthetic/writer.py', 'from ..datasets import info_checks',
     'projects.mmdet3d_plugin.synthetic is not allowed to import\n'
     'projects.mmdet3d_plugin.datasets'),
    ('cli/run.py', 'from ..demo import quickstart',
     'projects.mmdet3d_plugin.cli is not allowed to import\n'
     'projects.mmdet3d_plugin.demo'),
    ('doctor/checks/dist.py', 'from ...demo import quickstart',
     'projects.mmdet3d_plugin.doctor is not allowed to import\n'
     'projects.mmdet3d_plugin.demo'),
    ('config/loading.py', 'from ..utils import find_unpicklable',
     'projects.mmdet3d_plugin.config is not allowed to import\n'
     'projects.mmdet3d_plugin.utils'),
], ids=['config->engine', 'compat->datasets', 'synthetic->datasets',
        'cli->demo', 'doctor->demo', 'config->utils shim'])
def test_planted_upward_import_breaks_the_contract(tmp_path, where, planted,
                                                   message):
    """An import inside a function, upward or between independent parts,
    fails the contract (a copy of the package is linted)."""
    shutil.copytree(REPO / 'projects', tmp_path / 'projects',
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(REPO / '.importlinter', tmp_path)
    target = tmp_path / 'projects' / 'mmdet3d_plugin' / where
    target.write_text(target.read_text() +
                      f'\n\ndef _planted():\n    {planted}\n')
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert 'Contracts: ' in proc.stdout and ', 0 broken.' not in proc.stdout
    assert ' '.join(message.split()) in ' '.join(proc.stdout.split()), \
        proc.stdout


def test_no_file_over_600_lines():
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob('*.py')
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f'split these by the sections they have: {long}'


def _contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(REPO / '.importlinter')
    return parser


def _names(value: str) -> set:
    return {name.strip() for line in value.splitlines()
            for name in line.split('|') if name.strip()}


def test_every_part_is_a_layer_of_the_contract():
    """A new top-level folder or module must be placed in .importlinter's
    layers (exhaustive = true makes lint-imports refuse it otherwise); only
    the shims of earlier import paths stay outside, and every part is
    forbidden to import them."""
    contracts = _contracts()
    layers = contracts['importlinter:contract:layers']
    assert layers['exhaustive'] == 'true'
    parts = {p.name for p in PACKAGE.iterdir()
             if p.is_dir() and (p / '__init__.py').is_file()}
    parts |= {p.stem for p in PACKAGE.glob('*.py') if p.stem != '__init__'}
    shims = _names(layers['exhaustive_ignores'])
    assert shims == {'utils', 'apis'}
    assert parts == _names(layers['layers']) | shims
    forbidden = contracts['importlinter:contract:shims']
    prefix = 'projects.mmdet3d_plugin.'
    assert _names(forbidden['forbidden_modules']) == {
        prefix + shim for shim in shims}
    assert _names(forbidden['source_modules']) == {
        prefix + part for part in parts - shims}


@pytest.mark.parametrize('shim, name, real', [
    ('utils', 'find_unpicklable', 'pickling'),
    ('utils', 'load_config', 'config'),
    ('utils', 'free_port', 'dist'),
    ('utils', 'prepare_synthetic_nuscenes', 'synthetic'),
    ('utils', 'find_unused_parameters', 'cli'),
    ('apis', 'train', 'cli'),
    ('apis', 'run_quickstart', 'demo'),
    ('apis.launch', 'train_parser', 'cli.parsers'),
    ('apis.launch', 'prepare_train', 'cli.run'),
    ('apis.launch', 'PluginDirCollisionError', 'config.plugin_dir'),
    ('apis.launch', 'build_runner', 'cli.runner'),
    ('apis', 'run_tool', 'cli'),
    ('apis', 'find_unused_parameters', 'cli'),
])
def test_shims_of_earlier_paths_warn_and_work(shim, name, real):
    import importlib
    prefix = 'projects.mmdet3d_plugin.'
    module = importlib.import_module(prefix + shim)
    with pytest.warns(DeprecationWarning,
                      match=rf'{prefix}{shim}\.{name} is deprecated: import '
                      rf'{name} from {prefix}{real} '):
        found = getattr(module, name)
    assert found is getattr(importlib.import_module(prefix + real), name)
    assert name in dir(module)


def test_shim_refuses_names_it_never_had():
    from projects.mmdet3d_plugin import utils
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        utils.nope


def test_atomic_checkpoint_rewrite_lives_in_config():
    from projects.mmdet3d_plugin.config import checkpoint_hook
    from projects.mmdet3d_plugin.engine import hooks
    from projects.mmdet3d_plugin.engine.hooks import atomic_checkpoint_hook
    assert hooks.use_atomic_checkpoints is \
        checkpoint_hook.use_atomic_checkpoints
    assert not hasattr(atomic_checkpoint_hook, 'use_atomic_checkpoints')
