"""What a skipped step is recorded as: one line in the log, one entry of
``<work_dir>/nonfinite.json``. Each rank's batch is named by its dataset
indices (``dataset_indices``, from the sampler's order:
``batch_indices.py``) and by what its samples carry (:func:`batch_samples`).
"""
import json
import math
import os.path as osp
from typing import Any, Dict, List, Optional

from ...datasets.wrappers import walk_datasets
from ...fileio.atomic import atomic_write

#: The records of a run's skipped steps, in its work dir.
RECORDS_FILE = 'nonfinite.json'
#: The metainfo keys of a data sample that name it.
_SAMPLE_KEYS = ('sample_idx', 'token', 'lidar_path')


def _number(value: Any) -> Any:
    if hasattr(value, 'detach'):  # log_vars keep their autograd graph
        value = value.detach().float().mean()
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    return value if math.isfinite(value) else str(value)  # 'nan', 'inf'


def loss_terms(outputs: Optional[dict]) -> Dict[str, Any]:
    """The logged loss terms, non-finite ones as ``'nan'`` / ``'inf'``."""
    return {k: _number(v) for k, v in (outputs or {}).items()}


def nonfinite_terms(terms: Dict[str, Any]) -> Dict[str, str]:
    """The terms of :func:`loss_terms` that are not finite numbers."""
    return {k: v for k, v in terms.items() if isinstance(v, str)}


def sample_tokens(dataset: Any) -> Dict[int, str]:
    """``{sample_idx: token}`` of the first dataset (outermost first) whose
    infos carry both (nuScenes'), read once after a bad step; empty when
    none does."""
    for each in walk_datasets(dataset):
        if hasattr(each, 'dataset') or not hasattr(each, 'get_data_info'):
            continue  # a wrapper: its dataset comes next
        tokens = {}
        for i in range(len(each)):
            info = each.get_data_info(i)
            if 'sample_idx' not in info or 'token' not in info:
                return {}
            tokens[info['sample_idx']] = info['token']
        return tokens
    return {}


def batch_samples(data_batch: Any,
                  tokens: Optional[Dict[int, str]] = None) -> List[dict]:
    """What names each sample of a batch: mmdet3d data samples'
    ``sample_idx``, ``lidar_path`` and ``token`` (from ``tokens``, see
    :func:`sample_tokens`); a dict batch's ``index``."""
    if not isinstance(data_batch, dict):
        return []
    samples = []
    for sample in data_batch.get('data_samples') or ():
        meta = getattr(sample, 'metainfo', {})
        named = {k: meta[k] for k in _SAMPLE_KEYS if k in meta}
        if 'token' not in named and meta.get('sample_idx') in (tokens or {}):
            named['token'] = tokens[meta['sample_idx']]
        samples.append(named)
    if not samples and 'index' in data_batch:
        samples = [dict(index=int(i)) for i in data_batch['index']]
    return samples


def describe(record: dict) -> str:
    """One line for the log (``record['action']``, default ``'skipped on
    every rank'``, says what became of the step)."""
    parts = []
    for rank in record['ranks']:
        terms = ', '.join(f'{k}={v}' for k, v in rank['nonfinite_terms']
                          .items()) or 'loss finite'
        names = ', '.join(
            str(s.get('token') or s.get('index', s.get('sample_idx', '?')))
            for s in rank['samples'])
        names = f'samples [{names}]; ' if names else ''
        indices = rank.get('dataset_indices')
        indices = '' if indices is None else (
            f'dataset indices [{", ".join(map(str, indices))}]; ')
        module = rank['first_module'] or 'none in the forward'
        inputs = ', '.join(rank['nonfinite_inputs'])
        inputs = f'non-finite inputs: {inputs}; ' if inputs else ''
        parts.append(f'rank {rank["rank"]}: {terms}; {indices}{names}'
                     f'{inputs}first non-finite module: {module}')
    action = record.get('action', 'skipped on every rank')
    return (f'non-finite step: iteration {record["iteration"]} {action} '
            f'(gradient norm {record["grad_norm"]}); ' + ' | '.join(parts)
            + f' ({record["in_a_row"]} in a row, {record["skipped"]} in all)')


def append_record(work_dir: str, record: dict) -> str:
    """Add ``record`` to ``<work_dir>/nonfinite.json`` (a list), replaced
    atomically; returns the file's path."""
    path = osp.join(work_dir, RECORDS_FILE)
    records = []
    if osp.isfile(path):
        with open(path) as f:
            records = json.load(f)
    records.append(record)
    atomic_write(json.dumps(records, indent=2) + '\n', path)
    return path
