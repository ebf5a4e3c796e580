"""Why a run fails: the one table of causes, known upstream bugs included.

Each :class:`Cause` says how it shows (exception text, signal, exit code),
what it means and what to change. The launchers' root-cause report
(``failures``), the tools' error printer (``cli.run_tool``) and the doctor
all look failures up here. :data:`KNOWN_ERRORS` are the bugs of the
upstream stack that the plugin knows (a table of causes, not a
workaround: the workarounds are in ``compat``); :func:`known_error` finds
one in an exception's chain, also when it was raised in a DataLoader
worker and arrives as the worker's traceback text, and they are rows of
:data:`CAUSES` too. :data:`PEER_DEATH` is not a cause: it is how a rank
fails *because* another rank died (a victim).
"""
import re
import signal
from typing import NamedTuple, Optional, Tuple

from ..compat.inventory import OFF_VARIABLE
from ..constants import (CUSTOM_IMPORTS, HANG_EXIT_CODE, HANG_MESSAGE_PREFIX,
                         HANG_REPORT_NAME)
from .unused_report import REPORT_FILE as UNUSED_PARAMS_FILE


class Cause(NamedTuple):
    """A likely cause of a failed rank, how to recognise it, and the fix.

    Args:
        key (str): Stable identifier, e.g. ``'host_oom'`` (in the JSON
            report).
        title (str): A few words for the report's "Likely cause" line.
        explanation (str): What happened, one or two sentences.
        fix (str): What to change.
        hint (str): One sentence for one-line error printers (a DataLoader
            worker killed by a signal).
        patterns (tuple[re.Pattern]): Any of them found in the error text
            (``Type: message`` and the traceback) selects this cause.
        signals (tuple[str]): Signal names that select this cause.
        exit_codes (tuple[int]): Exit codes that select this cause.
    """
    key: str
    title: str
    explanation: str
    fix: str
    hint: str = ''
    patterns: Tuple['re.Pattern', ...] = ()
    signals: Tuple[str, ...] = ()
    exit_codes: Tuple[int, ...] = ()


class KnownError(NamedTuple):
    """An upstream error: its text, its cause and the fix."""
    pattern: 're.Pattern'
    cause: str
    fix: str


#: The upstream bugs the plugin knows.
KNOWN_ERRORS = (
    KnownError(
        re.compile(r"module 'numpy' has no attribute 'long'"),
        "mmdet3d 1.4.0's DataBaseSampler (ObjectSample's GT-database "
        'sampling) uses np.long, removed in numpy 1.24 (mmdet3d #2821; fixed '
        'by PR #2872, in no release yet)',
        f'import the plugin ({CUSTOM_IMPORTS}), which registers a fixed '
        f'DataBaseSampler, and leave dbsampler_np_long out of {OFF_VARIABLE}'),
    KnownError(
        re.compile(r'Weights only load failed'),
        'torch >= 2.6 loads with weights_only=True and mmengine <= 0.10.7 '
        'checkpoints hold other objects (mmengine #1655)',
        'import the plugin (it allows exactly the objects mmengine writes), '
        'or load the file with weights_only=False only if you trust it'),
    KnownError(
        re.compile(r"cannot pickle 'dict_keys' object"),
        "nuscenes-devkit 1.2.0's DetectionConfig keeps class_names as "
        "dict_keys, which spawn / forkserver DataLoader workers cannot "
        'receive',
        "use type='SafeNuScenesDataset' / 'SafeNuScenesMetric' from the "
        'plugin, or mp_start_method=fork'),
)


def known_error(exc: BaseException) -> Optional[KnownError]:
    """The :class:`KnownError` matching ``exc`` or its causes, if any.

    Args:
        exc (BaseException): The error; its ``__cause__`` and
            ``__context__`` chain is searched too.

    Returns:
        KnownError | None: The first match, or None.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        for known in KNOWN_ERRORS:
            if known.pattern.search(text):
                return known
        exc = exc.__cause__ or exc.__context__
    return None


#: Words near "No space left on device" that say it is shared memory.
_SHM = r'(/dev/shm|shared memory|DataLoader|multiprocessing/reductions)'


def _any(*texts: str) -> Tuple['re.Pattern', ...]:
    return tuple(re.compile(text) for text in texts)


HANG = Cause(
    key='hang',
    title='hang (found by DistWatchdogHook)',
    explanation='no rank finished an iteration for the watchdog\'s timeout, '
    'a long phase a rank declared (rank 0\'s evaluation) was about to '
    'outlast its own timeout, or the ranks drifted apart; the stuck rank(s), '
    'their phase and their frame are named above',
    fix=f'read {HANG_REPORT_NAME} in the run\'s log folder (every rank\'s '
    'iteration and Python stack); a rank stuck in a collective waits for a '
    'peer stuck elsewhere (data loading, rank-0-only work, a collective '
    'that only some ranks call); an evaluation that is legitimately long '
    'needs a larger dist_wait_timeout in its evaluator',
    patterns=_any(r'^(\w+: )?' + re.escape(HANG_MESSAGE_PREFIX)),
    exit_codes=(HANG_EXIT_CODE, ))

DDP_UNUSED = Cause(
    key='ddp_unused_parameters',
    title='unused parameters under DDP',
    explanation='some parameters got no gradient on some rank (a branch '
    'that only some samples or ranks take, or a loss term left out), and '
    'DDP with find_unused_parameters=False waits for their gradients',
    fix="add custom_hooks = [dict(type='DDPUnusedParamHook')]: it writes "
    f'{UNUSED_PARAMS_FILE} in the log folder with the parameters per rank '
    'and the config line to use, or run tools/find_unused_params.py CONFIG '
    'before launching; then freeze or remove dead parameters, or set '
    'find_unused_parameters=True in model_wrapper_cfg',
    patterns=_any(
        'Expected to have finished reduction in the prior iteration',
        r'DDPUnusedParamHook: DDP stopped'))

SHM_FULL = Cause(
    key='shm_full',
    title='shared memory (/dev/shm) too small',
    explanation='DataLoader workers pass batches through /dev/shm; when it '
    'is full a worker dies of SIGBUS or gets "No space left on device". '
    "Docker's default /dev/shm is 64 MB",
    fix='run the container with --shm-size=8g (or --ipc=host); or lower '
    'num_workers, prefetch_factor or the batch size; tools/doctor.py '
    'checks /dev/shm against the DataLoader settings',
    hint='SIGBUS in a DataLoader worker is most often /dev/shm running '
    "full (Docker's default is 64 MB); run the container with "
    '--shm-size=8g or --ipc=host, or lower num_workers.',
    patterns=_any(
        r'killed by signal: Bus error',
        r'unable to (write to file </torch_|allocate shared memory)',
        _SHM + r'[\s\S]*No space left on device',
        r'No space left on device[\s\S]*' + _SHM),
    signals=('SIGBUS', ))

HOST_OOM = Cause(
    key='host_oom',
    title='host out of memory (SIGKILL)',
    explanation='SIGKILL without a Python error is most often the '
    "kernel's out-of-memory killer ('dmesg | grep -i oom' tells); the "
    'rank and its DataLoader workers each hold their own memory',
    fix='lower train_dataloader.num_workers and prefetch_factor (each '
    'worker holds prefetch_factor batches), keep persistent_workers off '
    'if memory is tight, and use SafeNuScenesDataset so spawn/forkserver '
    'workers share the info arrays instead of copying them; '
    'tools/doctor.py checks host RAM against workers x processes',
    hint='SIGKILL is most often the out-of-memory killer (see dmesg); '
    'lower num_workers or batch_size.',
    patterns=_any(r'killed by signal: Killed', r'\bMemoryError\b',
                  r'Cannot allocate memory'),
    signals=('SIGKILL', ))

CUDA_OOM = Cause(
    key='cuda_oom',
    title='GPU out of memory',
    explanation='a rank needed more GPU memory than it had',
    fix="checkpoint activations (presets = ['activation_checkpointing'], "
    'or --cfg-options activation_checkpointing=auto: the same results, '
    'about half the peak for CenterPoint), halve the batch size and '
    'keep the effective batch with gradient accumulation (--accum 2, or '
    "presets = ['grad_accum_x2']), train in bf16/fp16 (--amp bf16 / --amp "
    'fp16); tools/doctor.py CONFIG --gpu-memory 16G measures what each '
    'gives before launch; set '
    'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against '
    'fragmentation',
    patterns=_any(r'CUDA out of memory', r'OutOfMemoryError',
                  r'CUBLAS_STATUS_ALLOC_FAILED',
                  r'CUDNN_STATUS_(NOT_SUPPORTED|ALLOC_FAILED).*memory'))

DIST_TIMEOUT = Cause(
    key='dist_timeout',
    title='collective timeout (NCCL/gloo)',
    explanation='a rank waited in a collective (all_reduce, barrier, '
    'broadcast) longer than the process group timeout: another rank was '
    'stuck, much slower (data loading, evaluation on one rank) or skipped '
    'the collective',
    fix="add custom_hooks = [dict(type='DistWatchdogHook', timeout=600)] "
    'to see where each rank is; raise env_cfg.dist_cfg.timeout only for '
    'work that is legitimately long (e.g. evaluation); a collective must be '
    'called by every rank',
    patterns=_any(r'Watchdog caught collective operation timeout',
                  r'before timing out', r'Timed out (waiting|after)',
                  r'DistStoreError', r'Socket Timeout'))

NCCL_ERROR = Cause(
    key='nccl_error',
    title='NCCL error',
    explanation='NCCL failed (driver, network or topology)',
    fix='rerun with NCCL_DEBUG=INFO to see the failing step; check that '
    'every node has the same NCCL and driver; try NCCL_P2P_DISABLE=1 or '
    'NCCL_IB_DISABLE=1 to rule out the transport',
    patterns=_any(r'NCCL error', r'nccl(Internal|System|Unhandled'
                  r'Cuda|InvalidUsage|Remote)Error'))

NATIVE_CRASH = Cause(
    key='native_crash',
    title='native crash',
    explanation='the process died in C/C++/CUDA code (an extension such '
    'as mmcv ops or spconv, or a driver); the Python stack of the crash '
    '(faulthandler) is printed above the summary',
    fix='run one process (tools/train.py CONFIG) to reproduce it, with '
    'CUDA_LAUNCH_BLOCKING=1 on GPUs; check that mmcv/spconv were built for '
    'this torch and CUDA (tools/doctor.py checks the ops)',
    signals=('SIGSEGV', 'SIGABRT', 'SIGILL', 'SIGFPE'))

TERMINATED = Cause(
    key='terminated',
    title='stopped from outside',
    explanation='every rank was stopped by a signal that no rank raised '
    'itself: the job was cancelled, hit its time limit, or the launcher '
    'was interrupted',
    fix="check the scheduler's time limit and whether the job was "
    'cancelled; resume from the last checkpoint with --resume',
    signals=('SIGTERM', 'SIGINT', 'SIGHUP'))

LOST_PEER = Cause(
    key='lost_peer',
    title='a peer died without leaving an error here',
    explanation='every rank that left an error lost its connection to a '
    'peer: the rank that failed first is on another node (read that '
    "node's report), or was killed without an exit status (on Slurm, "
    "srun's output names the signal; 'Killed' is most often the host's "
    'out-of-memory killer)',
    fix='find the first failure in the other node\'s report or in srun\'s '
    'output above; for SIGKILL lower num_workers and prefetch_factor')

NONFINITE = Cause(
    key='nonfinite',
    title='non-finite steps (NaN / Inf loss or gradients)',
    explanation='NonFiniteGuardHook skipped steps whose gradients (or fp16 '
    'losses) were not finite, one after the other or more than the run '
    'allows (each is in nonfinite.json in the work dir, with the rank, the '
    'loss terms, the samples of its batch and the first module whose '
    'output was not finite), or the weights became NaN / Inf and the '
    'checkpoint was not written',
    fix='read nonfinite.json: the same samples every time point at the '
    'data (check those files), as do non-finite inputs or the first layer '
    'named; a loss that grows step after step, at the LR (lower it, '
    'warm up longer, clip gradients with optim_wrapper.clip_grad); raise '
    'max_consecutive / max_skipped of NonFiniteGuardHook only if the '
    'records are understood',
    patterns=_any(r'NonFinite(Steps|State)Error'))

DATA = Cause(
    key='data',
    title='broken data files',
    explanation='samples could not be loaded: files missing, truncated or '
    'unreadable, named in the error with their sample; more than '
    "BadSampleHook's max_bad_samples of them (each in bad_samples.json in "
    'the work dir), a data root that is mostly missing, or a run whose '
    'samples are not replaced',
    fix='find every broken file with tools/check_data.py CONFIG (--read '
    'also reads them), repair or restore them (or the mount), then '
    '--resume; raise max_bad_samples of BadSampleHook only for files you '
    'know are lost',
    patterns=_any(r'BadSamples?Error'))

EXCEPTION = Cause(
    key='exception',
    title='an error in the code, config or data',
    explanation='a Python exception that no entry of the table matches',
    fix='fix what the message says at the frame shown; when every rank '
    'raises it, it is not a distributed problem: reproduce it in one '
    'process (tools/train.py CONFIG, tools/test.py CONFIG CHECKPOINT)')

UNKNOWN = Cause(
    key='unknown',
    title='unknown (no error recorded)',
    explanation='the rank exited without a Python exception in its error '
    'file (sys.exit, os._exit, or an error before the entry point ran)',
    fix="read the rank's own output above torchrun's summary")

#: Causes in the order they are tried: the first that matches wins.
CAUSES: Tuple[Cause, ...] = (
    HANG, DDP_UNUSED, NONFINITE, DATA, SHM_FULL, HOST_OOM, CUDA_OOM,
    NCCL_ERROR) + tuple(
        Cause(key='upstream_bug', title='known upstream bug',
              explanation=known.cause, fix=known.fix,
              patterns=(known.pattern, )) for known in KNOWN_ERRORS) + (
        DIST_TIMEOUT, NATIVE_CRASH)

#: How a rank fails because a peer died: not a cause.
PEER_DEATH = _any(r'Connection (reset|closed) by peer', r'Broken pipe',
                  r'failed to recv, got 0 bytes', r'Connection refused',
                  r'remote process exited', r'NCCL communicator was aborted',
                  r'ProcessGroup.*(aborted|shut ?down)', r'Socket closed')
#: Signals the launcher sends to the other ranks once one failed.
VICTIM_SIGNALS = ('SIGTERM', 'SIGINT', 'SIGHUP')


def signal_name(exit_code: Optional[int]) -> Optional[str]:
    """``'SIGKILL'`` for exit code -9 (as torch elastic reports a signal).

    Args:
        exit_code (int, optional): A process's exit code; negative for a
            signal.

    Returns:
        str | None: The signal's name, or None when no signal ended it.
    """
    if exit_code is None or exit_code >= 0:
        return None
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return f'signal {-exit_code}'


def find_cause(text: str = '',
               exit_code: Optional[int] = None) -> Optional[Cause]:
    """The first :data:`CAUSES` entry that matches a failure.

    Args:
        text (str): The error: ``Type: message`` and, when known, the
            traceback. Defaults to ''.
        exit_code (int, optional): The process's exit code (negative:
            killed by that signal).

    Returns:
        Cause | None: The matching cause, or None.
    """
    name = signal_name(exit_code)
    for cause in CAUSES:
        if name is not None and name in cause.signals:
            return cause
        if exit_code is not None and exit_code in cause.exit_codes:
            return cause
        if text and any(p.search(text) for p in cause.patterns):
            return cause
    return None


def is_peer_death(text: str) -> bool:
    """Whether an error says only that a peer went away."""
    return any(p.search(text) for p in PEER_DEATH)


def signal_hint(name: str) -> str:
    """The one-sentence hint for a DataLoader worker killed by ``name``.

    Args:
        name (str): The signal as PyTorch names it in "killed by signal:
            X" (``'Killed'``, ``'Bus error'``) or as ``signal`` does
            (``'SIGKILL'``).

    Returns:
        str: The hint with a leading space, or '' for other signals.
    """
    name = name.rstrip('. ')
    aliases = {'Killed': 'SIGKILL', 'Bus error': 'SIGBUS'}
    name = aliases.get(name, name)
    for cause in CAUSES:
        if name in cause.signals and cause.hint:
            return ' ' + cause.hint
    return ''
