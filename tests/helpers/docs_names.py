"""The names the docs give the code, and whether each still exists.

Read from ``docs/*.md``, ``README.md`` and the docstrings of the package's
``__init__.py`` files; every rule says which names are ours to check and
which are not (placeholders, run outputs, upstream settings):

1. Python paths written in full, ``projects.mmdet3d_plugin...``, anywhere:
   the longest importable module prefix is imported, the rest is got as
   attributes (a function, class or constant must resolve).
2. Import statements, in the docs' fenced blocks and inline code and in
   docstrings: they must work (any module, upstream ones too).
3. Paths of the repository, anywhere in the text: ``projects/``,
   ``tools/``, ``configs/``, ``tests/``, ``benchmarks/``, ``docs/``,
   ``requirements/``, ``.ci/``: the file or folder exists (a glob matches
   something), ``file.py:LINE`` has that many lines, ``file.py::test_x``
   defines ``test_x``.
4. Paths in inline code written from the package or from ``tests/``
   (``engine/hooks/foo.py``, ``shipped_configs/``): they exist under one of
   the repository, the package, ``tests/`` (an ``__init__`` docstring's
   own folder first). A bare ``name.py`` or ``name/`` exists under a
   folder named on the same line, or, when the line names none, anywhere
   in the repository's code. Not ours: commands (code with spaces: rule 3
   checks their paths), absolute, home and ``../`` paths, URLs,
   ``<placeholders>``, ``my_*`` / ``your_*`` / capitalised names
   (``my_config.py``, ``OLD.py``), paths whose first folder is no folder
   of ours (Slurm's ``auth/none``), what ``.gitignore`` ignores
   (``work_dirs/``, ``data/``, ``.venv/``: run outputs and the user's
   data), output files (``.json``, ``.png``, ``.pkl``, ...) and
   :data:`NOT_OURS`.
5. Markdown links to files of the repository: the file exists and the
   ``#anchor`` is a heading of it.
6. In ``__init__`` docstrings, a module named relative to its package
   (````guard````, ````failures.causes.KNOWN_ERRORS````, ``:mod:`.x```,
   ``:func:`~projects...```): a module or attribute of the package, else
   of the plugin's root; a dotted name starting with a package of the
   stack (:data:`STACK`) is imported. Any other dotted name is a setting
   (the doctor's ``data.files``), not checked.
7. Objects named by themselves in inline code: a ``CamelCase`` name, a
   call ``name()`` / ``.method()``: defined in the repository's Python
   (a class, function, method or module constant), or by one of the
   stack's modules of :data:`STACK_MODULES` (a class's attributes
   included), or a builtin, or in :data:`NOT_OURS`.

Each problem reads ``page:line: `name`: why``.
"""
import ast
import builtins
import glob
import importlib
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / 'projects' / 'mmdet3d_plugin'
PACKAGE = 'projects.mmdet3d_plugin'
ROOT_FOLDERS = ('projects', 'tools', 'configs', 'tests', 'benchmarks', 'docs',
                'requirements', '.ci')
# Packages of the stack whose dotted names a docstring may give (rule 6).
STACK = ('mmdet3d', 'mmdet', 'mmengine', 'mmcv', 'torch', 'numpy',
         'nuscenes')
# Where the upstream classes the docs name live (rule 7).
STACK_MODULES = (
    'io', 'os', 'mmengine.config', 'mmengine.dataset', 'mmengine.evaluator',
    'mmengine.hooks', 'mmengine.optim', 'mmengine.runner', 'mmcv.transforms',
    'mmdet.datasets.transforms', 'mmdet.engine.hooks', 'mmdet.models',
    'mmdet.models.task_modules', 'mmdet3d.models.task_modules',
    'mmdet3d.datasets', 'mmdet3d.datasets.transforms', 'mmdet3d.engine.hooks',
    'mmdet3d.evaluation', 'mmdet3d.models', 'torch.cuda', 'torch.distributed',
    'torch.distributed.elastic.multiprocessing.errors', 'torch.utils.data',
    'nuscenes.nuscenes', 'nuscenes.eval.detection.evaluate',
    'nuscenes.eval.detection.data_classes', 'nuscenes.utils.data_classes')
CODE_TREES = ('projects', 'tools', 'tests', 'benchmarks', 'configs', '.ci')
# Names in inline code that are neither ours nor Python of the stack.
NOT_OURS = {
    'vis_data/': "mmengine's visualizer folder in a work dir",
    'uniad_plugin/': "the user's plugin folder in the UniAD example",
    'find_unused_parameters': "DDP's argument (torch), not a module",
    'init_bias': "CenterHead's argument (mmdet3d), not a module",
    'class_names': "DetectionConfig's attribute (nuscenes-devkit)",
    'PyOS_AfterFork_Child': "CPython's C API",
    'KillWait': 'a Slurm setting',
    'GraceTime': 'a Slurm setting',
    'Killed': "the kernel's word for an OOM kill in srun's output",
    'NuScenesE2EDataset': "UniAD's dataset, in the plugin_dir example",
    'GradientCumulativeOptimizerHook': "mmcv 0.x's hook, what a 0.x config "
                                       'names',
}
OUTPUT_SUFFIXES = ('.json', '.png', '.pkl', '.pth', '.txt', '.npy', '.bin',
                   '.log', '.pcd', '.jpg')

_IDENT = r'[A-Za-z_]\w*'
_PY_PATH = re.compile(r'(?<![\w./-])projects\.mmdet3d_plugin(?:\.\w+)*')
_REPO_PATH = re.compile(
    r'(?<![\w./~$-])((?:%s)/[\w./*+-]*)((?::\d+)|(?:::\w+))?'
    % '|'.join(re.escape(f) for f in ROOT_FOLDERS))
_FENCE = re.compile(r'^\s*(```|~~~)')
_SPAN = re.compile(r'(?<!`)`([^`\n]+(?:\n[^`\n]+)*)`(?!`)')
_DOC_SPAN = re.compile(r'``([^`]+)``')
_ROLE = re.compile(r':(?:mod|func|class|data|meth|attr|obj):`~?([^`]+)`')
_IMPORT = re.compile(
    r'^[ \t]*(from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]+)'
    r'|import[ \t]+[\w.]+(?:[ \t]+as[ \t]+\w+)?)', re.M)
_LINK = re.compile(r'\]\(([^)\s]+)\)')
_CALL = re.compile(r'^(\.?%s)\(.*\)$' % _IDENT, re.S)
_CAMEL = re.compile(r'^([A-Z]\w*[a-z]\w*)(?:\.\w+)*$')
_DOTTED = re.compile(r'^%s(?:\.%s)*$' % (_IDENT, _IDENT))


@dataclass(frozen=True)
class Name:
    """A name the text gives the code.

    Args:
        where (str): ``page:line``.
        kind (str): ``python``, ``import``, ``path``, ``relpath``, ``docpath``,
            ``link``, ``module`` or ``object`` (the rules above).
        text (str): the name as written.
        base (str): what a relative name is resolved against: the page's
            folder (links), the docstring's package (modules), the folders
            named on the same line (bare file names). Defaults to ''.
    """
    where: str
    kind: str
    text: str
    base: str = ''


def _line(text: str, offset: int, first: int) -> int:
    return first + text.count('\n', 0, offset)


def _blank_fences(text: str) -> Tuple[str, str]:
    """The prose (fenced blocks blanked) and the code (prose blanked), both
    with the text's line breaks, so offsets give the same lines."""
    prose, code, inside = [], [], False
    for line in text.split('\n'):
        fence = _FENCE.match(line)
        if fence or inside:
            code.append('' if fence else line)
            prose.append('')
            if fence:
                inside = not inside
        else:
            prose.append(line)
            code.append('')
    return '\n'.join(prose), '\n'.join(code)


def _common(text: str, where: str, first: int = 1) -> Iterator[Name]:
    """Rules 1 and 3: full Python paths and repository paths."""
    for m in _PY_PATH.finditer(text):
        start = text.rfind('\n', 0, m.start()) + 1
        if re.match(r'\s*(?:from|import)\s', text[start:m.start()]):
            continue  # an import statement: rule 2
        yield Name(f'{where}:{_line(text, m.start(), first)}', 'python',
                   m.group(0))
    for m in _REPO_PATH.finditer(text):
        path = m.group(1).rstrip('.')
        yield Name(f'{where}:{_line(text, m.start(), first)}', 'path',
                   path + (m.group(2) or ''))


def _imports(text: str, where: str, first: int = 1) -> Iterator[Name]:
    for m in _IMPORT.finditer(text):
        yield Name(f'{where}:{_line(text, m.start(1), first)}', 'import',
                   ' '.join(m.group(1).split()))


def _context_folders(line: str) -> str:
    """The folders a line of prose names (`` `x/` ``), joined by ``|``."""
    return '|'.join(s for s in re.findall(r'`([\w./-]+/)`', line))


def names_in_markdown(text: str, page: str) -> List[Name]:
    """Every name a Markdown page gives the code (rules 1-5 and 7).

    Args:
        text (str): the page.
        page (str): its path from the repository root, for the messages
            and its links.
    """
    names = list(_common(text, page))
    prose, code = _blank_fences(text)
    names += _imports(code, page)
    lines = prose.split('\n')
    for m in _SPAN.finditer(prose):
        span = ' '.join(m.group(1).split())
        lineno = _line(prose, m.start(), 1)
        where = f'{page}:{lineno}'
        if _IMPORT.match(span):
            names.append(Name(where, 'import', span))
        elif ' ' in span:
            continue  # a command or a phrase: rule 3 checked its paths
        elif _CALL.match(span) and '.' not in _CALL.match(span).group(1)[1:]:
            names.append(Name(where, 'object', _CALL.match(span).group(1)))
        elif _CAMEL.match(span):
            names.append(Name(where, 'object', _CAMEL.match(span).group(1)))
        elif _is_relpath(span):
            names.append(Name(where, 'relpath', span,
                              _context_folders(lines[lineno - 1])))
    folder = str(Path(page).parent)
    for m in _LINK.finditer(prose):
        target = m.group(1)
        if not re.match(r'^[a-z]+:', target):
            names.append(Name(f'{page}:{_line(prose, m.start(), 1)}', 'link',
                              target, folder))
    return names


def _is_relpath(span: str) -> bool:
    """Whether inline code is a path of ours to resolve (rule 4)."""
    if re.search(r'[<>$~*\\]|://|^\.{1,2}/|^/', span):
        return False
    stem = span.rstrip('/').rsplit('/', 1)[-1].split('.')[0]
    if stem.startswith(('my_', 'your_')) or stem.isupper():
        return False  # a placeholder: my_config.py, OLD.py
    if '/' not in span and not span.endswith(('.py', '.sh', '.md', '.ini')):
        return False
    return not span.split('::')[0].endswith(OUTPUT_SUFFIXES)


def names_in_docstring(doc: str, source: str, package: str,
                       first: int = 1) -> List[Name]:
    """Every name an ``__init__`` docstring gives the code (rules 1-4, 6,
    7).

    Args:
        doc (str): the docstring, as written.
        source (str): the ``__init__.py`` path from the repository root.
        package (str): its package's dotted name, which relative names
            start from.
        first (int): the line of the file the docstring starts on.
            Defaults to 1.
    """
    names = list(_common(doc, source, first))
    names += _imports(doc, source, first)
    for m in _ROLE.finditer(doc):
        where = f'{source}:{_line(doc, m.start(), first)}'
        target = m.group(1)
        if not target.startswith(PACKAGE):  # rule 1 has the full ones
            names.append(Name(where, 'module', target, package))
    folder = package.replace('.', '/')
    for m in _DOC_SPAN.finditer(doc):
        where = f'{source}:{_line(doc, m.start(), first)}'
        span = ' '.join(m.group(1).split())
        if span.startswith(PACKAGE) or _IMPORT.match(span):
            continue  # rules 1 and 2
        if span.endswith(OUTPUT_SUFFIXES):
            continue  # a file a run writes
        if _is_relpath(span):
            names.append(Name(where, 'docpath', span, folder))
        elif _CAMEL.match(span):
            names.append(Name(where, 'object', _CAMEL.match(span).group(1)))
        elif _DOTTED.match(span) and not span.isupper():
            names.append(Name(where, 'module', span, package))
    return names


def markdown_pages() -> List[Path]:
    """``docs/*.md`` and ``README.md``."""
    return sorted((REPO / 'docs').glob('*.md')) + [REPO / 'README.md']


def init_files() -> List[Path]:
    """The package's ``__init__.py`` files."""
    return sorted(PACKAGE_DIR.rglob('__init__.py'))


def names_in_file(path: Path) -> List[Name]:
    """The names a page or an ``__init__.py`` gives the code."""
    rel = path.relative_to(REPO).as_posix()
    text = path.read_text()
    if path.suffix == '.md':
        return names_in_markdown(text, rel)
    tree = ast.parse(text)
    if not (tree.body and isinstance(tree.body[0], ast.Expr)
            and isinstance(tree.body[0].value, ast.Constant)
            and isinstance(tree.body[0].value.value, str)):
        return []
    node = tree.body[0]
    return names_in_docstring(node.value.value, rel,
                              '.'.join(path.parent.relative_to(REPO).parts),
                              node.lineno)


# Resolution.

@lru_cache(maxsize=None)
def resolve(dotted: str) -> Optional[str]:
    """Import the longest module prefix of a dotted name and get the rest
    as attributes.

    Returns:
        Optional[str]: None when it resolves, else why not.
    """
    parts = dotted.split('.')
    for i in range(len(parts), 0, -1):
        module = '.'.join(parts[:i])
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name and (module == e.name
                           or module.startswith(e.name + '.')):
                continue  # this prefix is no module
            return f'importing {module} fails: {e}'
        except Exception as e:  # a documented module must import
            return f'importing {module} fails: {type(e).__name__}: {e}'
        break
    else:
        return f'no module {parts[0]!r}'
    for j in range(i, len(parts)):
        if not hasattr(obj, parts[j]):
            return (f'{".".join(parts[:j])} has no attribute or submodule '
                    f'{parts[j]!r}')
        obj = getattr(obj, parts[j])
    return None


def _resolve_import(statement: str) -> Optional[str]:
    try:
        node = ast.parse(statement).body[0]
    except SyntaxError as e:
        return f'not a Python import statement: {e.msg}'
    if isinstance(node, ast.Import):
        return next(filter(None, (resolve(a.name) for a in node.names)), None)
    problem = resolve(node.module)
    if problem:
        return problem
    for alias in node.names:
        if alias.name != '*' and resolve(f'{node.module}.{alias.name}'):
            return f'{node.module} has no {alias.name!r}'
    return None


def _py_lines(path: Path) -> int:
    return len(path.read_text(errors='replace').splitlines())


def _check_path(text: str) -> Optional[str]:
    path, line, test = text, None, None
    if '::' in path:
        path, test = path.split('::', 1)
    elif re.search(r':\d+$', path):
        path, line = path.rsplit(':', 1)
    if glob.has_magic(path):
        return None if glob.glob(str(REPO / path)) else 'matches no file'
    full = REPO / path
    if not full.exists():
        return 'no such file or folder'
    if line and int(line) > _py_lines(full):
        return f'{path} has {_py_lines(full)} lines'
    if test and not re.search(rf'^\s*(?:async )?def {test}\b',
                              full.read_text(), re.M):
        return f'{path} defines no {test}'
    return None


def _check_rooted(text: str) -> Optional[str]:
    """Rule 3: from the repository's root, or from the package or tests/
    (``tools/test_slurm.py`` is a test's path)."""
    if _ignored(text):
        return None
    why = _check_path(text)
    if why and any(_check_path(f'{root}/{text}') is None
                   for root in ('projects/mmdet3d_plugin', 'tests')):
        return None
    return why


def _ignored(path: str) -> bool:
    """Whether ``.gitignore`` ignores the path's folder (rule 4)."""
    folders = [p.strip().strip('/') for p in
               (REPO / '.gitignore').read_text().splitlines()
               if p.strip().endswith('/') and '*' not in p]
    return any(path == f or path.startswith(f + '/') for f in folders)


@lru_cache(maxsize=None)
def _code_files() -> Tuple[str, ...]:
    """Every file and folder of the code trees, relative to the repo."""
    found = []
    for tree in CODE_TREES:
        for p in (REPO / tree).rglob('*'):
            if '__pycache__' not in p.parts:
                found.append(p.relative_to(REPO).as_posix()
                             + ('/' if p.is_dir() else ''))
    return tuple(found)


@lru_cache(maxsize=None)
def _folder_names() -> frozenset:
    """The names of the code trees' folders."""
    return frozenset(c.rstrip('/').rsplit('/', 1)[-1] for c in _code_files()
                     if c.endswith('/')) | set(ROOT_FOLDERS)


def _check_relpath(name: Name) -> Optional[str]:
    text = name.text
    if text in NOT_OURS or _ignored(text):
        return None
    roots = ['', 'projects/mmdet3d_plugin', 'tests']
    if name.kind == 'docpath':
        roots.insert(0, name.base)
    if any(_check_path(f'{root}/{text}' if root else text) is None
           for root in roots):
        return None
    path = text.split('::')[0].rstrip('/')
    if name.kind == 'docpath':
        return (f'no such file or folder in {name.base}, the repository, '
                'the package or tests/')
    if '/' in path and path.split('/')[0] not in _folder_names():
        return None  # its first folder is none of ours: not our path
    folders = [f.rstrip('/') for f in name.base.split('|')
               if f and f.rstrip('/') != path]
    if folders:  # under one of the folders the line names
        under = re.compile('(?:%s)/(?:.*/)?%s$' % (
            '|'.join('(?:^|/)' + re.escape(f) for f in folders),
            re.escape(path)))
        if any(under.search(c.rstrip('/')) for c in _code_files()):
            return None
        return ('no such file or folder from the repository, the package, '
                f'tests/ or the folders the line names ({", ".join(folders)})')
    if '/' in path:
        return ('no such file or folder from the repository, the package '
                'or tests/')
    if any(c.rstrip('/').rsplit('/', 1)[-1] == path for c in _code_files()):
        return None
    return 'no such file or folder in the repository'


_SLUG_DROP = re.compile(r'[^\w\- ]')


def anchors(page: Path) -> List[str]:
    """The ``#anchors`` of a Markdown page's headings, as GitHub makes
    them."""
    prose, _ = _blank_fences(page.read_text())
    seen, out = {}, []
    for line in prose.split('\n'):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m:
            slug = _SLUG_DROP.sub('', m.group(1).lower()).replace(' ', '-')
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.append(slug if n == 0 else f'{slug}-{n}')
    return out


def _check_link(name: Name) -> Optional[str]:
    target, _, anchor = name.text.partition('#')
    page = (REPO / name.base / target).resolve() if target else None
    if page is not None and not page.exists():
        return 'the link points to no file'
    if anchor:
        if page is None:
            page = REPO / name.where.rsplit(':', 1)[0]
        if page.suffix == '.md' and anchor not in anchors(page):
            return f'{page.relative_to(REPO)} has no heading #{anchor}'
    return None


def _check_module(name: Name) -> Optional[str]:
    text, package = name.text, name.base
    if text.startswith('.'):
        return resolve(package + text)
    if text in NOT_OURS:
        return None
    first = text.split('.')[0]
    for start in (package, PACKAGE):
        if resolve(f'{start}.{first}') is None:
            return resolve(f'{start}.{text}')
    if '.' in text:
        if first in STACK:
            return resolve(text)
        return None  # a setting (``data.files``), not a module
    return (f'neither {package} nor {PACKAGE} has a module or attribute '
            f'{text!r}')


@lru_cache(maxsize=None)
def _repo_defs() -> frozenset:
    """Classes, functions, methods and module constants of the repo."""
    names = set()
    pattern = re.compile(r'^\s*(?:async\s+)?(?:class|def)\s+(\w+)'
                         r'|^(\w+)\s*(?::[^=\n]*)?=', re.M)
    for tree in ('projects', 'tools', 'tests', 'benchmarks'):
        for path in (REPO / tree).rglob('*.py'):
            for m in pattern.finditer(path.read_text(errors='replace')):
                names.add(m.group(1) or m.group(2))
    return frozenset(names)


@lru_cache(maxsize=None)
def _stack_names() -> frozenset:
    """The names the modules of :data:`STACK_MODULES` define, and the
    attributes of their classes (``peek()``)."""
    names = set(dir(builtins))
    with warnings.catch_warnings():  # deprecated module attributes
        warnings.simplefilter('ignore')
        for module in STACK_MODULES:
            for name, value in vars(importlib.import_module(module)).items():
                names.add(name)
                if isinstance(value, type):
                    names.update(vars(value))
    return frozenset(names)


def _check_object(name: Name) -> Optional[str]:
    text = name.text.lstrip('.')
    if text in NOT_OURS or text in _repo_defs() or text in _stack_names():
        return None
    return ('defined nowhere in the repository, nor by the stack modules '
            'of docs_names.STACK_MODULES, nor a builtin')


def problem(name: Name) -> Optional[str]:
    """Why a name does not resolve; None when it does."""
    if name.kind == 'python':
        return resolve(name.text)
    if name.kind == 'import':
        return _resolve_import(name.text)
    if name.kind == 'path':
        return _check_rooted(name.text)
    if name.kind in ('relpath', 'docpath'):
        return _check_relpath(name)
    if name.kind == 'link':
        return _check_link(name)
    if name.kind == 'module':
        return _check_module(name)
    return _check_object(name)


_ORDER = ('python', 'import', 'module', 'path', 'relpath', 'docpath', 'link',
          'object')


def check(names: Sequence[Name]) -> List[str]:
    """The problems of the names, one line each: ``page:line: `name`:
    why``."""
    out, seen = [], set()
    for name in sorted(names, key=lambda n: _ORDER.index(n.kind)):
        key = (name.where, name.text)
        if key in seen:
            continue
        seen.add(key)
        why = problem(name)
        if why:
            out.append(f'{name.where}: `{name.text}`: {why}')
    return sorted(out, key=_where_key)


def _where_key(message: str):
    page, line = message.split(':')[:2]
    return page, int(line)


# The "Code:" line of each page.

CODE_LINE = re.compile(r'^Code: (.+)$', re.M)
CODE_LINE_WITHIN = 8  # lines from the top


Entry = Tuple[str, List[str]]  # a path and the objects it defines


def code_entries(text: str) -> Optional[Tuple[int, List[Entry]]]:
    """A page's ``Code:`` line: its line and its entries, each a path of
    the repository and the names it defines.

    ``Code: projects/mmdet3d_plugin/engine/watchdog/ (DistWatchdogHook),
    tools/dist_run.py``: paths separated by ``, ``, each followed by the
    objects it defines in parentheses, if any.

    Returns:
        Optional[tuple]: None when no line of the page's top is one.
    """
    head = '\n'.join(text.split('\n')[:CODE_LINE_WITHIN])
    m = CODE_LINE.search(head)
    if not m:
        return None
    entries = []
    for part in re.findall(r'([^,(]+?)(?:\s*\(([^)]*)\))?(?:,\s*|$)',
                           m.group(1)):
        path, objects = part[0].strip(), part[1]
        if path:
            entries.append((path, [o.strip() for o in objects.split(',')
                                   if o.strip()]))
    return head.count('\n', 0, m.start()) + 1, entries


def code_line_problems(text: str, page: str) -> List[str]:
    """What is wrong with a page's ``Code:`` line: missing, a path that
    does not exist, an object its path does not define."""
    found = code_entries(text)
    if found is None:
        return [f'{page}:1: no "Code: path, path (Object)" line in the first '
                f'{CODE_LINE_WITHIN} lines']
    lineno, entries = found
    out = []
    if not entries:
        out.append(f'{page}:{lineno}: the Code line names no path')
    for path, objects in entries:
        full = REPO / path
        if not full.exists():
            out.append(f'{page}:{lineno}: `{path}`: no such file or folder')
            continue
        files = [full] if full.is_file() else sorted(full.rglob('*.py'))
        source = '\n'.join(f.read_text(errors='replace') for f in files)
        for obj in objects:
            if not re.search(rf'^(?:class|def) {obj}\b|^{obj}\s*[:=]',
                             source, re.M):
                out.append(f'{page}:{lineno}: `{obj}`: {path} defines no '
                           f'{obj}')
    return out
