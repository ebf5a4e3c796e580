"""Module attributes that moved, for the shims of earlier import paths
(``utils``, ``apis``): each access warns, naming the real module."""
import warnings
from types import ModuleType
from typing import Callable, Dict, List, Tuple


def public_names(module: ModuleType) -> Dict[str, ModuleType]:
    """Every public name ``module`` defines (not those it imports), mapped
    to it: the table of a shim for the names of a module that moved."""
    return {
        name: module
        for name, value in vars(module).items()
        if not name.startswith('_') and not isinstance(value, ModuleType)
        and getattr(value, '__module__', module.__name__) == module.__name__
    }


def moved_names(shim: str, names: Dict[str, ModuleType]
                ) -> Tuple[Callable[[str], object], Callable[[], List[str]]]:
    """``__getattr__`` and ``__dir__`` of a shim module (PEP 562).

    Args:
        shim (str): The shim's module name, e.g.
            ``'projects.mmdet3d_plugin.utils'``.
        names (dict[str, module]): Each name the shim keeps, and the module
            that holds it now.

    Returns:
        tuple: ``(__getattr__, __dir__)``; ``__getattr__`` emits a
        ``DeprecationWarning`` that names the real module, then returns
        the object.

    Examples:
        >>> __getattr__, __dir__ = moved_names(__name__, {'load': config})
    """

    def __getattr__(name: str):
        module = names.get(name)
        if module is None:
            raise AttributeError(
                f'module {shim!r} has no attribute {name!r}; it keeps the '
                f'earlier import paths of {sorted(names)} only')
        warnings.warn(
            f'{shim}.{name} is deprecated: import {name} from '
            f'{module.__name__} ({shim} only keeps earlier import paths '
            'working)', DeprecationWarning, stacklevel=2)
        return getattr(module, name)

    def __dir__() -> List[str]:
        return sorted(names)

    return __getattr__, __dir__
