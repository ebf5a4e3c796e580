"""The package's layout: layers without cycles (import-linter's contract in
``.importlinter``, drawn in docs/architecture.md), every part placed in
it, no test-only helper shipped."""
import ast
import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / 'projects' / 'mmdet3d_plugin'
PACKAGE_NAME = 'projects.mmdet3d_plugin'
LINT_IMPORTS = Path(sys.executable).with_name('lint-imports')


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), '.importlinter', '--no-cache'],
        cwd=cwd, capture_output=True, text=True, timeout=120)


def test_layers_contract_is_kept():
    proc = lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert 'Contracts: 1 kept, 0 broken.' in proc.stdout


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
    ('config/loading.py', 'from ..failures import causes',
     'projects.mmdet3d_plugin.config is not allowed to import\n'
     'projects.mmdet3d_plugin.failures'),
    ('failures/report.py', 'from ..datasets import wrappers',
     'projects.mmdet3d_plugin.failures is not allowed to import\n'
     'projects.mmdet3d_plugin.datasets'),
    ('failures/report.py', 'from ..engine import runner',
     'projects.mmdet3d_plugin.failures is not allowed to import\n'
     'projects.mmdet3d_plugin.engine'),
    ('cli/run.py', 'from ..demo import quickstart',
     'projects.mmdet3d_plugin.cli is not allowed to import\n'
     'projects.mmdet3d_plugin.demo'),
    ('lazy_registration.py', 'from . import registration',
     'projects.mmdet3d_plugin.lazy_registration is not allowed to import\n'
     'projects.mmdet3d_plugin.registration'),
    ('create_data/converter.py', 'from ..synthetic import writer',
     'projects.mmdet3d_plugin.create_data is not allowed to import\n'
     'projects.mmdet3d_plugin.synthetic'),
], ids=['config->engine', 'compat->datasets', 'synthetic->datasets',
        'config->failures', 'failures->datasets', 'failures->engine', 'cli->demo',
        'lazy_registration->registration', 'create_data->synthetic'])
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


def _contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(REPO / '.importlinter')
    return parser


def _names(value: str) -> set:
    return {name.strip() for line in value.splitlines()
            for name in re.split(r'[|:]', line) if name.strip()}


def test_every_part_is_a_layer_of_the_contract():
    """A new top-level folder or module must be placed in .importlinter's
    layers (exhaustive = true makes lint-imports refuse it otherwise), and
    docs/architecture.md draws the same rows."""
    contracts = _contracts()
    layers = contracts['importlinter:contract:layers']
    assert layers['exhaustive'] == 'true'
    assert 'exhaustive_ignores' not in layers
    parts = {p.name for p in PACKAGE.iterdir()
             if p.is_dir() and (p / '__init__.py').is_file()}
    parts |= {p.stem for p in PACKAGE.glob('*.py') if p.stem != '__init__'}
    assert parts == _names(layers['layers'])
    page = (REPO / 'docs' / 'architecture.md').read_text()
    for row in layers['layers'].strip().splitlines():
        assert row.strip() in page, (row, 'docs/architecture.md')


def _registered_hooks() -> dict:
    """``{class name: module file}`` of every ``@HOOKS.register_module()``
    class of the package, read from the source."""
    found = {}
    for path in PACKAGE.rglob('*.py'):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    'HOOKS.register_module' in ast.unparse(d)
                    for d in node.decorator_list):
                found[node.name] = path.relative_to(PACKAGE)
    return found


def test_each_hook_lives_in_its_capability_folder_and_the_index_lists_it():
    """A registered hook is a file of its capability's folder under
    ``engine/`` (beside its machinery), one hook per file, and
    ``engine/hooks/__init__.py`` imports every one of them."""
    from projects.mmdet3d_plugin.engine import hooks
    found = _registered_hooks()
    assert sorted(found) == sorted(hooks.__all__)
    for name, path in found.items():
        assert path.parts[0] == 'engine' and len(path.parts) == 3, path
        assert path.parts[1] != 'hooks', path
        assert len([p for p in found.values() if p == path]) == 1, path
        assert getattr(hooks, name).__module__ == (
            f'{PACKAGE_NAME}.' + '.'.join(path.with_suffix('').parts))
    assert [p.name for p in (PACKAGE / 'engine' / 'hooks').glob('*.py')
            ] == ['__init__.py']
