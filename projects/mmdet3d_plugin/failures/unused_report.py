"""DDP's unused-parameter failure as text: the report file's name and the
parser of DDP's error.

The failure report reads them after a run died; ``DDPUnusedParamHook``
writes the file and parses the same error while it runs.
"""
import re
from typing import Dict, List

#: File that ``DDPUnusedParamHook`` writes in the runner's ``log_dir``.
REPORT_FILE = 'unused_params.json'
_DDP_ERROR = 'Expected to have finished reduction in the prior iteration'
_DDP_INDICES = re.compile(
    r'Parameter indices which did not receive grad for rank (\d+):'
    r'((?:\s*\d+)*)')


def is_ddp_unused_error(err: BaseException) -> bool:
    """Whether ``err`` is DDP's error about parameters without gradient."""
    return isinstance(err, RuntimeError) and _DDP_ERROR in str(err)


def parse_unused_indices(message: str) -> Dict[int, List[int]]:
    """Read DDP's ``Parameter indices which did not receive grad`` lines.

    Args:
        message (str): Text of DDP's "Expected to have finished reduction"
            error.

    Returns:
        dict[int, list[int]]: Rank to indices into the DDP parameter list
        (trainable parameters of the wrapped module in ``named_parameters()``
        order). Empty when the message names no indices.
    """
    return {
        int(rank): [int(i) for i in indices.split()]
        for rank, indices in _DDP_INDICES.findall(message)
    }
