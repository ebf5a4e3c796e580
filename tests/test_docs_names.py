"""The maps cannot drift: every module, object, path and Python import the
docs (``docs/*.md``, ``README.md``) and the package's ``__init__``
docstrings name exists, and each docs page names its code in a ``Code:``
line. The rules of what counts as a name are in
``tests/helpers/docs_names.py``; the test process imports each named
module once (the stack with it: one import of mmdet3d)."""
import pytest

from tests.helpers import docs_names
from tests.helpers.docs_names import REPO

SOURCES = docs_names.markdown_pages() + docs_names.init_files()
PAGES = sorted((REPO / 'docs').glob('*.md'))


def _id(path):
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize('source', SOURCES, ids=_id)
def test_every_name_exists(source):
    problems = docs_names.check(docs_names.names_in_file(source))
    assert not problems, '\n' + '\n'.join(problems)


@pytest.mark.parametrize('page', PAGES, ids=_id)
def test_page_names_its_code(page):
    problems = docs_names.code_line_problems(page.read_text(), _id(page))
    assert not problems, '\n' + '\n'.join(problems)


PAGE = """\
# A page

Code: projects/mmdet3d_plugin/constants.py (PREEMPTED_EXIT_CODE), \
projects/mmdet3d_plugin/no_such_folder/, tools/train.py (NoSuchHook)

`projects.mmdet3d_plugin.no_such_module.thing` names a module that is not
there; `projects.mmdet3d_plugin.constants.REMOVED_CONSTANT` an object that
was removed; `projects.mmdet3d_plugin.constants.PREEMPTED_EXIT_CODE` is.

```python
from projects.mmdet3d_plugin.constants import REMOVED_CONSTANT
import projects.mmdet3d_plugin.no_such_module
from projects.mmdet3d_plugin.constants import PREEMPTED_EXIT_CODE
```

Run `tools/no_such_tool.py`, see `engine/no_such_hook.py`
and tests/helpers/fault_hooks.py:99999, [a page](no_such_page.md),
[a heading](architecture.md#no-such-heading), `NoSuchHookAnywhere`.

Not ours: `work_dirs/x/latest.pth`, `data/nuscenes/v1.0-mini`,
`<work_dir>/bad_samples.json`, `my_config.py`, `~/.cache/x/`, `vis_data/`,
`python tools/train.py CONFIG`, `env_cfg.dist_cfg.timeout`, `np.long`.
Ours and there: `engine/resume/`, `tests/conftest.py`,
[architecture](architecture.md#the-parts), `SafeNuScenesDataset`.
"""


def test_checker_reports_missing_names_with_page_and_line():
    problems = docs_names.check(
        docs_names.names_in_markdown(PAGE, 'docs/example.md'))
    expected = [
        ('docs/example.md:3:', 'no_such_folder'),
        ('docs/example.md:5:', 'projects.mmdet3d_plugin.no_such_module'),
        ('docs/example.md:6:', 'REMOVED_CONSTANT'),
        ('docs/example.md:10:', 'import REMOVED_CONSTANT'),
        ('docs/example.md:11:', 'import projects.mmdet3d_plugin.no_such'),
        ('docs/example.md:15:', '`tools/no_such_tool.py`'),
        ('docs/example.md:15:', '`engine/no_such_hook.py`'),
        ('docs/example.md:16:', 'fault_hooks.py:99999'),
        ('docs/example.md:16:', '`no_such_page.md`'),
        ('docs/example.md:17:', 'architecture.md#no-such-heading'),
        ('docs/example.md:17:', '`NoSuchHookAnywhere`'),
    ]
    for where, name in expected:
        assert any(p.startswith(where) and name in p for p in problems), (
            where, name, problems)
    assert len(problems) == len(expected), problems


def test_checker_reports_a_removed_module_of_a_docstring():
    doc = """The parts: ``marks``, ``crash`` (gone), ``summary``;
    :mod:`.table`, :func:`.no_such.function`, ``unused_params.json``,
    the doctor's ``data.files``."""
    problems = docs_names.check(docs_names.names_in_docstring(
        doc, 'projects/mmdet3d_plugin/engine/unused_params/__init__.py',
        'projects.mmdet3d_plugin.engine.unused_params', first=1))
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        'projects/mmdet3d_plugin/engine/unused_params/__init__.py:1: '
        '`crash`:'), problems
    assert problems[1].startswith(
        'projects/mmdet3d_plugin/engine/unused_params/__init__.py:2: '
        '`.no_such.function`:'), problems


def test_code_line_problems_name_page_line_and_path():
    problems = docs_names.code_line_problems(PAGE, 'docs/example.md')
    assert problems == [
        'docs/example.md:3: `projects/mmdet3d_plugin/no_such_folder/`: no '
        'such file or folder',
        'docs/example.md:3: `NoSuchHook`: tools/train.py defines no '
        'NoSuchHook',
    ]
    assert docs_names.code_line_problems('# A page\n\nNo code line.\n',
                                         'docs/x.md') == [
        'docs/x.md:1: no "Code: path, path (Object)" line in the first 8 '
        'lines']
