"""Find out what in an object cannot be pickled, and where.

DataLoader workers started by ``spawn`` or ``forkserver`` receive the dataset
by pickle; when that fails, Python only says ``cannot pickle 'dict_keys'
object``. :func:`find_unpicklable` walks the object the way pickle does
(attributes from ``__getstate__`` / ``__dict__`` / ``__slots__``, dict items,
list and tuple items, whatever ``__reduce_ex__`` hands over) and names the
deepest attribute paths that fail, e.g.
``pipeline.transforms[2].fn (function <lambda>): PicklingError: ...``.

:func:`~.check.check_picklable` pickles an object as a spawn worker receives
it, with this audit on failure.
"""
import functools
import io
import pickle
import threading
import time
import types
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Tuple

_PROTOCOL = pickle.HIGHEST_PROTOCOL
_ATOMIC = (type(None), bool, int, float, complex, str, bytes, bytearray)
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType,
                   types.MethodType, types.LambdaType)

WORKER_CONTEXT = ('DataLoader workers started by spawn or forkserver '
                  'receive the dataset by pickle')

_audit_state = threading.local()


def auditing() -> bool:
    """Whether :func:`find_unpicklable` is running in this thread.

    Objects whose ``__reduce_ex__`` runs an audit on failure use it to avoid
    auditing again while they are being audited.
    """
    return getattr(_audit_state, 'depth', 0) > 0


def default_dumps(obj: Any) -> bytes:
    """Pickle ``obj`` with the highest protocol (the audit's default)."""
    return pickle.dumps(obj, protocol=_PROTOCOL)


def describe_type(obj: Any) -> str:
    """Short, readable name of the type of ``obj`` for error messages.

    Functions and methods are named with their qualified name
    (``function <lambda>``, ``method Foo.bar``), classes with ``class X``,
    everything else with its type's qualified name (``dict_keys``).
    """
    if isinstance(obj, types.MethodType):
        return f'method {getattr(obj, "__qualname__", "?")}'
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return f'function {getattr(obj, "__qualname__", "?")}'
    if isinstance(obj, type):
        return f'class {obj.__qualname__}'
    return type(obj).__qualname__


def fix_hint(obj: Any) -> str:
    """Suggest how to make ``obj`` picklable, by its kind."""
    name = type(obj).__name__
    if isinstance(obj, _FUNCTION_TYPES) or isinstance(obj, type):
        return ('define it at module level (not a lambda, local function or '
                'class) so workers can import it by name, or pass a '
                'functools.partial of a module-level function')
    if name in ('dict_keys', 'dict_values', 'dict_items', 'odict_keys',
                'odict_values', 'odict_items'):
        return 'store list(...) of the view instead of the view itself'
    if isinstance(obj,
                  types.GeneratorType) or name in ('generator', 'coroutine',
                                                   'async_generator'):
        return 'store a list or a factory instead of a generator'
    if isinstance(obj, io.IOBase) or 'lock' in name.lower() or name in (
            'socket', 'Thread', 'SSLContext', 'mmap', 'Connection'):
        return ('open or create it lazily inside the worker (e.g. on first '
                'use in __getitem__) and drop it in __getstate__')
    return ('make it picklable (module-level class, __getstate__ / '
            '__reduce__), or create it lazily inside the worker')


def format_error(exc: BaseException) -> str:
    """``TypeError: cannot pickle ...`` on one line, kept short."""
    text = ' '.join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + '...'
    return f'{type(exc).__name__}: {text}'


def _key_path(path: str, key: Any) -> str:
    return f'{path}[{key!r}]'


def _attr_path(path: str, name: str) -> str:
    return f'{path}.{name}' if path else name


def _children(obj: Any) -> Iterator[Tuple[str, Any, Any]]:
    """Yield what pickle would serialize inside ``obj``.

    Yields ``(kind, label, child)`` with kind 'attr' (attribute name),
    'item' (dict key or sequence index), 'key' (a dict key itself) or 'raw'
    (label appended to the path as is).
    """
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            yield 'key', key, key
            yield 'item', key, value
        return
    if isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield 'item', i, value
        return
    if isinstance(obj, (set, frozenset)):
        for value in list(obj):
            yield 'raw', '{...}', value
        return
    if isinstance(obj, _FUNCTION_TYPES) or isinstance(obj, type):
        return  # Pickled by name: nothing inside to walk.
    if isinstance(obj, functools.partial):
        yield 'attr', 'func', obj.func
        yield 'attr', 'args', obj.args
        yield 'attr', 'keywords', obj.keywords
        return

    state: Any = None
    args: Tuple = ()
    listitems = dictitems = None
    try:
        reduced = obj.__reduce_ex__(_PROTOCOL)
    except Exception:
        reduced = None
    if isinstance(reduced, tuple):
        args = reduced[1] if len(reduced) > 1 else ()
        state = reduced[2] if len(reduced) > 2 else None
        listitems = reduced[3] if len(reduced) > 3 else None
        dictitems = reduced[4] if len(reduced) > 4 else None
        if args and isinstance(args[0], type) and args[0] is type(obj):
            args = args[1:]  # copyreg.__newobj__(cls, *args)
    if state is None and reduced is None:
        # The object's own reduction failed (e.g. it pickles a payload of
        # its whole state): walk what it holds instead.
        getstate = getattr(obj, '__getstate__', None)
        try:
            state = getstate() if getstate is not None else None
        except Exception:
            state = None
        if state is None:
            state = getattr(obj, '__dict__', None)

    if isinstance(state, tuple) and len(state) == 2 and (
            state[0] is None or isinstance(state[0], dict)) and isinstance(
                state[1], dict):
        merged = dict(state[0] or {})
        merged.update(state[1])  # __dict__ plus __slots__
        state = merged
    if isinstance(state, dict):
        for name, value in list(state.items()):
            yield 'attr', name, value
    elif state is not None:
        yield 'raw', '<state>', state
    for i, arg in enumerate(args or ()):
        yield 'raw', f'<arg {i}>', arg
    if listitems is not None and not isinstance(obj, (list, tuple)):
        for i, value in enumerate(list(listitems)):
            yield 'item', i, value
    if dictitems is not None and not isinstance(obj, dict):
        for key, value in list(dictitems):
            yield 'item', key, value


def _child_path(path: str, kind: str, label: Any) -> str:
    if kind == 'attr':
        return _attr_path(path, label)
    if kind == 'item':
        return _key_path(path, label)
    if kind == 'key':
        return f'{path}<key {label!r}>'
    return f'{path}{label}'


class Offender(NamedTuple):
    """One object that cannot be pickled.

    Args:
        path (str): Attribute path from the audited object.
        obj (Any): The offending object itself.
        error (str): The pickling error, one line.
    """
    path: str
    obj: Any
    error: str

    def __str__(self) -> str:
        return f'{self.path} ({describe_type(self.obj)}): {self.error}'


class _Audit:

    def __init__(self, dumps: Callable[[Any], bytes], max_depth: int,
                 time_limit: float):
        self.dumps = dumps
        self.max_depth = max_depth
        self.deadline = time.monotonic() + time_limit
        self.seen = set()
        self.found: List[Offender] = []

    def error_of(self, obj: Any) -> Optional[BaseException]:
        if isinstance(obj, _ATOMIC):
            return None
        try:
            self.dumps(obj)
        except Exception as exc:  # pickle raises many kinds of error
            return exc
        return None

    def report(self,
               path: str,
               obj: Any,
               exc: BaseException,
               note: str = '') -> None:
        self.found.append(
            Offender(path or '<object>', obj, format_error(exc) + note))

    def visit(self, path: str, obj: Any, exc: BaseException,
              depth: int) -> None:
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if depth >= self.max_depth:
            self.report(
                path, obj, exc,
                f' (max_depth={self.max_depth} reached; not narrowed '
                'further)')
            return
        failing = []
        try:
            for kind, label, child in _children(obj):
                if time.monotonic() > self.deadline:
                    self.report(path, obj, exc,
                                ' (time limit reached; not narrowed further)')
                    return
                child_exc = self.error_of(child)
                if child_exc is not None:
                    child_path = _child_path(path, kind, label)
                    failing.append((child_path, child, child_exc))
        except Exception:  # a broken container: report it as a whole
            failing = []
        if not failing:
            self.report(path, obj, exc)
            return
        for child_path, child, child_exc in failing:
            self.visit(child_path, child, child_exc, depth + 1)


def find_unpicklable(
        obj: Any,
        max_depth: int = 12,
        time_limit: float = 30.0,
        dumps: Optional[Callable[[Any], bytes]] = None) -> List[str]:
    """Name what in ``obj`` cannot be pickled, by attribute path.

    Only the deepest failing paths are reported, not their ancestors: for a
    dataset holding a devkit ``DetectionConfig`` that is
    ``eval_detection_configs.class_names``, not ``eval_detection_configs``.

    Args:
        obj (Any): The object to audit, e.g. a dataset.
        max_depth (int): How many levels below ``obj`` to narrow down.
            Defaults to 12.
        time_limit (float): Seconds to spend narrowing down; paths not
            narrowed in time are reported where the audit stopped.
            Defaults to 30.
        dumps (callable, optional): Serializer used to test each object;
            it must raise on failure. Defaults to ``obj.pickle_audit_dumps``
            where ``obj`` defines it (objects with their own pickler), else
            :func:`pickle.dumps` with the highest protocol.

    Returns:
        list[str]: One line per offender, ``'<path> (<type>): <error>'``,
        empty when ``obj`` pickles.

    Examples:
        >>> class Holder:
        ...     pass
        >>> h = Holder()
        >>> h.names = {'car': 1}.keys()
        >>> find_unpicklable(h)
        ["names (dict_keys): TypeError: cannot pickle 'dict_keys' object"]
    """
    return [
        str(offender) for offender in find_offenders(
            obj, max_depth=max_depth, time_limit=time_limit, dumps=dumps)
    ]


def find_offenders(
        obj: Any,
        max_depth: int = 12,
        time_limit: float = 30.0,
        dumps: Optional[Callable[[Any], bytes]] = None) -> List[Offender]:
    """Like :func:`find_unpicklable`, but returns :class:`Offender` tuples
    that also hold the offending objects."""
    if max_depth < 0:
        raise ValueError(
            f'find_unpicklable: max_depth must be >= 0, got {max_depth}')
    if time_limit <= 0:
        raise ValueError(
            f'find_unpicklable: time_limit must be > 0, got {time_limit}')
    if dumps is None:
        # Objects that pickle with their own pickler say which one.
        dumps = getattr(obj, 'pickle_audit_dumps', None) or default_dumps
    _audit_state.depth = getattr(_audit_state, 'depth', 0) + 1
    try:
        audit = _Audit(dumps, max_depth, time_limit)
        exc = audit.error_of(obj)
        if exc is None:
            return []
        audit.visit('', obj, exc, 0)
        return audit.found
    finally:
        _audit_state.depth -= 1


def unpicklable_message(owner: str,
                        obj: Any,
                        offenders: List[Offender],
                        fallback: BaseException,
                        why: str = WORKER_CONTEXT) -> str:
    """Build the error raised when ``obj`` cannot be pickled.

    Args:
        owner (str): Context prefix, e.g. the class name.
        obj (Any): The object that failed to pickle.
        offenders (list[Offender]): Output of :func:`find_offenders` on it.
        fallback (BaseException): The original pickling error.
        why (str): Why it has to be picklable, appended in parentheses.
            Defaults to the DataLoader worker explanation.

    Returns:
        str: ``"<owner>: cannot pickle attribute '<path>' (<type>): <error>;
        fix: <hint>"``, one clause per offender.
    """
    if not offenders:
        return (f'{owner}: cannot pickle {describe_type(obj)}: '
                f'{format_error(fallback)}; fix: make every attribute '
                f'picklable ({why})')
    clauses = [
        f"cannot pickle attribute '{o.path}' ({describe_type(o.obj)}): "
        f'{o.error}; fix: {fix_hint(o.obj)}' for o in offenders
    ]
    return f'{owner}: ' + ' | '.join(clauses) + f' ({why})'
