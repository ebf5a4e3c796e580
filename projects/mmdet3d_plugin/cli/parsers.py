"""The flags of ``tools/train.py`` and ``tools/test.py``: mmdet3d 1.4's,
plus the plugin's ``--accum``, ``--amp MODE`` and ``--data-root``."""
import argparse

from ..config.loading import add_cfg_options
from ..config.presets import FP32_FLAG, add_train_flags
from .errors import add_debug_flag


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
        choices=['none', 'pytorch', 'slurm', 'mpi'],
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
