"""The tools' flags: those of ``tools/train.py`` and ``tools/test.py``
(mmdet3d 1.4's, plus the plugin's ``--accum``, ``--amp MODE`` and
``--data-root``), and the ones other tools share (``--cfg-options``,
``--debug``).

Only argparse and mmengine's ``DictAction`` are imported here, so a tool
answers ``--help`` and bad arguments before the heavy stack loads.
"""
import argparse
import os.path as osp
from typing import Any

from mmengine.config import DictAction

from ..constants import AMP_CHOICES, FP32_FLAG

#: Environment variable that turns the one-line errors off.
DEBUG_ENV = 'MMDET3D_PLUGIN_DEBUG'
#: The job launchers of ``--launcher`` (mmdet3d's tools/train.py's).
LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')

CFG_OPTIONS_HELP = (
    'override settings of the config, as key=value pairs; lists as '
    'key="[a,b]" or key=a,b (quotes needed, no spaces)')


def add_cfg_options(parser: argparse.ArgumentParser,
                    help: str = CFG_OPTIONS_HELP) -> None:
    """Add mmengine's ``--cfg-options KEY=VALUE ...`` to a tool's parser.

    Pass the parsed dict to :func:`~..config.loading.load_config`.

    Args:
        parser (argparse.ArgumentParser): The tool's parser.
        help (str): Help text. Defaults to :data:`CFG_OPTIONS_HELP`.
    """
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        metavar='KEY=VALUE',
        help=help)


def add_debug_flag(parser: Any) -> Any:
    """Add ``--debug`` (read by :func:`.errors.debug_requested`) to a
    tool's parser.

    Args:
        parser (argparse.ArgumentParser): The tool's parser.

    Returns:
        argparse.ArgumentParser: ``parser``.
    """
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of input errors instead of one error line '
        f'(same as {DEBUG_ENV}=1)')
    return parser


def add_train_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--accum N`` and ``--amp [fp16|fp16-static|bf16|fp32]`` to a
    parser.

    Pass the parsed values to
    :func:`~..config.presets.merge_train_flags`.

    Args:
        parser (argparse.ArgumentParser): The training script's parser.
    """
    parser.add_argument(
        '--accum',
        type=int,
        default=None,
        metavar='N',
        help='accumulate gradients over N iterations per optimizer update '
        '(same as preset grad_accum_xN)')
    parser.add_argument(
        '--amp',
        nargs='?',
        const='fp16',
        default=None,
        choices=list(AMP_CHOICES),
        help='mixed precision: bare --amp or "fp16" = float16 with dynamic '
        'loss scale (preset fp16_dynamic), "fp16-static" = static loss scale '
        '512 (preset fp16), "bf16" = bfloat16 (preset bf16; on a CPU only '
        'fast with AVX512-BF16 / AMX), "fp32" = float32 whatever the config '
        'or its presets set')


def check_config_file(args: argparse.Namespace) -> None:
    """Stop on a config path that is no file, before the stack loads.

    A ``package::path`` name (``mmdet3d::centerpoint/...py``) is looked up
    when the config is read.

    Args:
        args (argparse.Namespace): Parsed flags with ``config``.

    Raises:
        FileNotFoundError: If ``args.config`` is not a file.
    """
    path = args.config
    if '::' not in path and not osp.isfile(path):
        raise FileNotFoundError(
            f'config: file {path!r} does not exist; give the path of a '
            'config file (e.g. configs/centerpoint/<name>.py) or a packaged '
            "config name such as 'mmdet3d::centerpoint/<name>.py'.")


def check_work_dir(args: argparse.Namespace) -> None:
    """Stop on a work dir that is no folder, before the stack loads.

    Raises:
        FileNotFoundError: If ``args.work_dir`` is not a folder.
    """
    if not osp.isdir(args.work_dir):
        raise FileNotFoundError(
            f'replay_step: {args.work_dir!r} is not a folder; give the work '
            'dir of the run (where nonfinite.json and iter_K.pth are)')


def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--data-root', metavar='DIR',
        help="point every dataset, evaluator and ObjectSample's GT database "
        'at this data root (a config\'s data_root variable is substituted '
        'when the file is read, so --cfg-options data_root=... cannot)')
    add_cfg_options(parser)
    parser.add_argument(
        '--launcher',
        choices=LAUNCHERS,
        default='none',
        help='job launcher')
    # torch.distributed.launch passes --local-rank on torch >= 2.0 and
    # --local_rank before; torchrun passes neither (it sets LOCAL_RANK).
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    add_debug_flag(parser)


def train_parser() -> argparse.ArgumentParser:
    """Flags of mmdet3d 1.4's ``tools/train.py`` plus the plugin's."""
    parser = argparse.ArgumentParser(description='Train a 3D detector')
    parser.add_argument('config', help='train config file path')
    add_train_flags(parser)
    parser.add_argument(
        '--sync_bn',
        choices=['none', 'torch', 'mmcv'],
        default='none',
        help='convert BatchNorm layers to SyncBatchNorm')
    parser.add_argument(
        '--auto-scale-lr',
        action='store_true',
        help='scale the LR by world size x batch size x accumulation')
    parser.add_argument(
        '--resume',
        nargs='?',
        type=str,
        const='auto',
        help='resume from this checkpoint, or from the latest one in the '
        'work dir when no path is given (a restarted or requeued run does '
        'so by itself)')
    parser.add_argument(
        '--checkpoint-minutes', type=float, metavar='N', default=None,
        help='also save a checkpoint every N minutes (the newest 2 of those '
        'are kept), so a crash loses at most N minutes of training')
    _common_args(parser)
    return parser


def test_parser() -> argparse.ArgumentParser:
    """Flags of mmdet3d 1.4's ``tools/test.py`` that apply to LiDAR models."""
    parser = argparse.ArgumentParser(description='Test (and evaluate) a model')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument(
        '--amp', choices=[FP32_FLAG], default=None,
        help='"fp32": evaluate in float32 whatever the config sets '
        '(val_cfg / test_cfg fp16, AMP optimizer wrappers)')
    _common_args(parser)
    return parser


def replay_parser() -> argparse.ArgumentParser:
    """Flags of ``tools/replay_step.py``."""
    parser = argparse.ArgumentParser(
        description='Replay one training step of a run in one process: the '
        'batch a rank trained at an iteration, rebuilt from the data '
        'position of the checkpoint before it, through that checkpoint\'s '
        'weights; prints the loss terms, the samples and the first module '
        'whose output is not finite.')
    parser.add_argument('work_dir', help="the run's work dir")
    parser.add_argument('--iteration', type=int, required=True, metavar='N',
                        help='the 1-based iteration (as nonfinite.json and '
                        'the log count it)')
    parser.add_argument('--rank', type=int, default=None, metavar='R',
                        help='the rank whose batch to rebuild (default: '
                        "the first rank the step's record names, else 0)")
    parser.add_argument('--config', default=None,
                        help="the run's config (default: the one config "
                        'file the run dumped into its work dir)')
    add_debug_flag(parser)
    return parser
