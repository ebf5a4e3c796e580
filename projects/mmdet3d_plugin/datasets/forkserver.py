"""Make forkserver DataLoader workers start as fast as forked ones.

Under ``forkserver`` every worker is forked from a server process that, by
default, has imported only ``__main__``; each worker then imports torch,
mmengine and mmdet3d itself while unpickling the dataset, which takes
seconds. Preloading those modules into the server makes a worker start with
everything imported, like a forked one, while keeping forkserver's safety
(no threads or CUDA state inherited from the main process).
"""
import multiprocessing
from multiprocessing import forkserver
from typing import List, Optional, Sequence

from ..constants import PLUGIN_MODULE

#: Modules a worker needs to unpickle and run an mmdet3d dataset.
DEFAULT_PRELOAD = ('numpy', 'torch', 'mmengine', 'mmcv', 'mmdet3d.structures',
                   'mmdet3d.datasets', PLUGIN_MODULE)


def setup_forkserver_preload(modules: Optional[Sequence[str]] = None,
                             start: bool = False) -> List[str]:
    """Add heavy imports to the forkserver's preload list.

    Call it where the start method is chosen, before the first DataLoader
    iterator (or anything else) starts the fork server; later calls have no
    effect on a running server. Modules already in the list (``__main__``
    by default, or what the user set) are kept. ``SafeNuScenesDataset``
    calls it when it is built. Harmless when forkserver is never used.

    Args:
        modules (Sequence[str], optional): Modules to preload. Defaults to
            :data:`DEFAULT_PRELOAD`.
        start (bool): Also start the server now, so that it imports in the
            background while the main process builds the model. Defaults to
            False.

    Returns:
        list[str]: The preload list now in effect.

    Examples:
        >>> from projects.mmdet3d_plugin.datasets import (
        ...     setup_forkserver_preload)
        >>> if cfg.env_cfg.mp_cfg.mp_start_method == 'forkserver':
        ...     setup_forkserver_preload(start=True)
    """
    wanted = list(DEFAULT_PRELOAD if modules is None else modules)
    for name in wanted:
        if not isinstance(name, str) or not name:
            raise TypeError(
                'setup_forkserver_preload: modules must be module names '
                f'(non-empty str), got {name!r}')
    # The multiprocessing API can set the list but not read it back.
    current = list(
        getattr(forkserver._forkserver, '_preload_modules', ['__main__']))
    preload = current + [name for name in wanted if name not in current]
    multiprocessing.set_forkserver_preload(preload)
    if start:
        forkserver.ensure_running()
    return preload
