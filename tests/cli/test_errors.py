"""Bad input fails with one message that names the file or key and the fix.

Datasets are built from the generated nuScenes data; tool errors go through
``tools/train.py``'s code path (:func:`run_tool` around ``cli.train``) in
this process, and one case launches the real script (marker ``launch``:
``tools/train.py``'s bad input, once) to check what a user sees: one
``error:`` line, exit status 1, no traceback.
"""
import os
import pickle
import re
from pathlib import Path

import pytest
from mmengine.registry import init_default_scope

from mmdet3d.registry import DATASETS, HOOKS
from projects.mmdet3d_plugin.cli.run_tool import run_tool
from projects.mmdet3d_plugin.cli.run import train
from projects.mmdet3d_plugin.cli.parsers import train_parser
from projects.mmdet3d_plugin.cli.run_tool import user_error_message

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / 'tests' / 'helpers'
from tests.helpers.toy_config import (  # noqa: E402
    toy_config, write_toy_config)
from tests.helpers.train_tool import start_train  # noqa: E402

INFO = 'nuscenes_infos_val.pkl'
PREFIX = dict(pts='samples/LIDAR_TOP', sweeps='sweeps/LIDAR_TOP')
POINTS = [
    dict(type='LoadPointsFromFile', coord_type='LIDAR', load_dim=5,
         use_dim=5),
    dict(type='LoadPointsFromMultiSweeps', sweeps_num=10, test_mode=True),
]


def _dataset(data_root, ann_file=INFO, **kwargs):
    init_default_scope('mmdet3d')
    cfg = dict(
        type='SafeNuScenesDataset',
        data_root=str(data_root),
        ann_file=ann_file,
        data_prefix=PREFIX,
        pipeline=[],
        test_mode=True)
    cfg.update(kwargs)
    return DATASETS.build(cfg)


@pytest.fixture(scope='module')
def infos(nus_synthetic):
    with open(nus_synthetic / INFO, 'rb') as f:
        return pickle.load(f)


def _info_file(tmp_path, name, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize('case, match', [
    ('missing_data_root',
     r"SafeNuScenesDataset: data_root '.*/no_such_root' is not a folder .*"
     r'set data_root to the nuScenes folder'),
    ('missing_ann_file',
     r"SafeNuScenesDataset: ann_file '.*nuscenes_infos_tain\.pkl' does not "
     r'exist; fix ann_file .* create the info files with `python '
     r'tools/create_data\.py nuscenes --root-path'),
    ('empty_ann_file',
     r'SafeNuScenesDataset: ann_file is not set; expected the info file '
     r'made by tools/create_data\.py'),
    ('truncated_pkl',
     r"SafeNuScenesDataset: cannot read info file '.*truncated\.pkl': it is "
     r'corrupt or truncated \((UnpicklingError|EOFError).*\); delete it and '
     r'create it again with `python tools/create_data\.py'),
    ('garbage_pkl',
     r"SafeNuScenesDataset: cannot read info file '.*garbage\.pkl': it is "
     r'corrupt or truncated'),
    ('empty_pkl',
     r"SafeNuScenesDataset: cannot read info file '.*empty\.pkl': it is "
     r'corrupt or truncated \(EOFError'),
    ('v0x_pkl',
     r"SafeNuScenesDataset: info file '.*v0x\.pkl' is in mmdet3d 0\.x "
     r"format \(keys 'infos', 'metadata'\); .* Create it again with "
     r'`python tools/create_data\.py nuscenes .*` \(about 2 minutes for '
     r"v1\.0-trainval on 2 cores\)\. Convert it with mmdet3d's "
     r'`python tools/dataset_converters/update_infos_to_v2\.py --dataset '
     r'nuscenes --pkl-path .*v0x\.pkl.*` only if it was made by mmdet3d >= '
     r'1\.0\.0rc0: it copies the boxes as they are'),
    ('list_pkl',
     r"SafeNuScenesDataset: info file '.*list\.pkl' is not an mmdet3d 1\.x "
     r"info file: expected a dict with keys 'metainfo' and 'data_list', got "
     r'a list'),
])
def test_bad_data_files(case, match, nus_synthetic, infos, tmp_path):
    raw = (nus_synthetic / INFO).read_bytes()
    kwargs = dict(data_root=nus_synthetic)
    if case == 'missing_data_root':
        kwargs['data_root'] = tmp_path / 'no_such_root'
    elif case == 'missing_ann_file':
        kwargs['ann_file'] = 'nuscenes_infos_tain.pkl'
    elif case == 'empty_ann_file':
        kwargs['ann_file'] = ''
    else:
        content = {
            'truncated_pkl': raw[:len(raw) // 2],
            'garbage_pkl': b'this is not a pickle\n' * 10,
            'empty_pkl': b'',
            'v0x_pkl': pickle.dumps(
                dict(infos=infos['data_list'],
                     metadata=dict(version='v1.0-mini'))),
            'list_pkl': pickle.dumps(infos['data_list']),
        }[case]
        kwargs['ann_file'] = str(
            _info_file(tmp_path, case.replace('_pkl', '.pkl'), content))
    with pytest.raises((FileNotFoundError, ValueError), match=match):
        _dataset(**kwargs)


def test_missing_sweeps_prefix_names_the_fix(nus_synthetic):
    with pytest.raises(
            ValueError,
            match=r"SafeNuScenesDataset: the infos have LiDAR sweeps "
            r"\('lidar_sweeps'\) but data_prefix has no 'sweeps' key .*; "
            r"add sweeps='sweeps/LIDAR_TOP' to data_prefix"):
        _dataset(nus_synthetic, data_prefix=dict(pts='samples/LIDAR_TOP'))


def test_lazy_init_checks_on_full_init(tmp_path):
    dataset = _dataset(tmp_path / 'no_such_root', lazy_init=True)
    with pytest.raises(FileNotFoundError, match='data_root .* is not a'):
        dataset.full_init()


@pytest.mark.parametrize('classes, error, match', [
    (['car', 'pedestrain', 'bus', 'bike'], ValueError,
     r"SafeNuScenesDataset: metainfo\.classes has unknown class names "
     r"\['pedestrain', 'bike'\]; the known classes are \['car', 'truck', "
     r".*'barrier'\]\. Fix the spelling"),
    (['car', 'car'], ValueError, r"lists \['car'\] more than once"),
    ('car', TypeError,
     r"metainfo\.classes must be a list of class names, got 'car' \(str\)"),
])
def test_bad_metainfo_classes(classes, error, match, nus_synthetic):
    with pytest.raises(error, match=match):
        _dataset(nus_synthetic, metainfo=dict(classes=classes))


def test_known_class_subset_builds(nus_synthetic):
    dataset = _dataset(
        nus_synthetic, metainfo=dict(classes=['car', 'pedestrian']))
    assert dataset.metainfo['classes'] == ['car', 'pedestrian']


@pytest.fixture
def root_missing_files(nus_synthetic, infos, tmp_path):
    """A root that links to the data, except sample 0's LiDAR file and the
    file of its first sweep of sample 1."""
    sample0 = infos['data_list'][0]['lidar_points']['lidar_path']
    sweep_of_1 = os.path.basename(
        infos['data_list'][1]['lidar_sweeps'][0]['lidar_points']['lidar_path'])
    root = tmp_path / 'root'
    for sub, skip in (('samples/LIDAR_TOP', sample0),
                      ('sweeps/LIDAR_TOP', sweep_of_1)):
        (root / sub).mkdir(parents=True)
        for src in (nus_synthetic / sub).iterdir():
            if src.name != skip:
                (root / sub / src.name).symlink_to(src)
    (root / INFO).symlink_to(nus_synthetic / INFO)
    return root, sample0, sweep_of_1


@pytest.mark.parametrize('index, what', [
    (0, 'LiDAR file'),
    (1, r'LiDAR sweep file \(sweep 0\)'),
])
def test_missing_point_file_names_sample_and_fix(root_missing_files, infos,
                                                 index, what):
    root, sample0, sweep_of_1 = root_missing_files
    missing = sample0 if index == 0 else sweep_of_1
    token = infos['data_list'][index]['token']
    dataset = _dataset(root, pipeline=POINTS)
    with pytest.raises(
            FileNotFoundError,
            match=(rf'SafeNuScenesDataset: sample {index} \(token {token}\) '
                   rf"of '.*{INFO}': {what} '.*{re.escape(missing)}' does "
                   r'not exist\. Check that data_root=.* and data_prefix '
                   r'point at .* create the info files again with `python '
                   r'tools/create_data\.py')):
        dataset[index]


def test_missing_point_file_in_worker_is_one_line(root_missing_files):
    """Through a real DataLoader worker, the tools print the worker line
    and the dataset's message."""
    from torch.utils.data import DataLoader
    root, sample0, _ = root_missing_files
    dataset = _dataset(root, pipeline=POINTS)
    loader = DataLoader(
        dataset, batch_size=1, num_workers=1, collate_fn=lambda x: x)
    with pytest.raises(FileNotFoundError) as info:
        next(iter(loader))
    message = user_error_message(info.value)
    assert '\n' not in message
    assert re.match(
        r'Caught FileNotFoundError in DataLoader worker process 0\. '
        r'FileNotFoundError: SafeNuScenesDataset: sample 0 .*LiDAR file '
        rf"'.*{re.escape(sample0)}' does not exist", message), message


# ---------------------------------------------------------------- tools


def _tool_error(capsys, argv) -> str:
    """Run tools/train.py's code in-process; return its one error line."""
    args = train_parser().parse_args([str(a) for a in argv])
    with pytest.raises(SystemExit) as info:
        run_tool(train, args)
    assert info.value.code == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith('error: ')]
    assert len(lines) == 1, err
    assert 'Traceback' not in err
    return lines[0]


@pytest.fixture
def toy_config_file(tmp_path):
    # A file name of its own per test: mmengine names the run's logger after
    # it, and a reused logger would write to an earlier test's stderr.
    # Seed 0 not in deterministic mode: keeps the pytest process out of it.
    return write_toy_config(
        tmp_path / f'{tmp_path.name}.py', max_iters=2, num_workers=0,
        randomness=dict(seed=0))


OPTIM = "optim_wrapper = dict(type='{type}', optimizer=dict(type='SGD', " \
        "lr=0.1){extra})\n"


@pytest.mark.parametrize('append, flags, match', [
    (OPTIM.format(type='OptimWrapper', extra=', accumulative_counts=0'), [],
     r'optim_wrapper\.accumulative_counts must be a positive integer .*'
     r'got 0\. Use a preset'),
    (OPTIM.format(type='OptimWrapper', extra=', accumulative_counts=-1'), [],
     r'accumulative_counts must be a positive integer .*got -1'),
    ('', ['--accum', '0'],
     r'--accum: expected a positive integer number of iterations per '
     r'optimizer update, got 0'),
    (OPTIM.format(type='AmpOptimWrapper', extra=', loss_scale=0'), [],
     r'optim_wrapper\.loss_scale must be positive, got 0; use a positive '
     r'number'),
    (OPTIM.format(type='AmpOptimWrapper', extra=', loss_scale=-1.0'), [],
     r'loss_scale must be positive, got -1\.0'),
    (OPTIM.format(type='AmpOptimWrapper', extra=", loss_scale='foo'"), [],
     r"optim_wrapper\.loss_scale='foo' is not valid; use a positive number"),
    (OPTIM.format(type='OptimWrapper', extra=', loss_scale=512.'), [],
     r'loss_scale is only used by AmpOptimWrapper.*optim_wrapper\.type is '
     r"'OptimWrapper'\. Use preset 'fp16'"),
    ("presets = ['grad_accum_x3']\n", [],
     r"presets: unknown preset 'grad_accum_x3'; known presets are \[.*"
     r"'grad_accum_x4'"),
    ("custom_hooks = [dict(type='DDPUnusedParamHook', check_iters=-1)]\n",
     [], r'DDPUnusedParamHook: check_iters must be an int >= 0, got -1'),
    ("custom_hooks = [dict(type='DDPUnusedParamHook', check_iters=0, "
     'interval=0)]\n', [],
     r'DDPUnusedParamHook: check_iters=0 and interval=0 would never check'),
    ("custom_hooks = [dict(type='DDPUnusedParamHook', out_file='')]\n", [],
     r'DDPUnusedParamHook: out_file must be a non-empty file name'),
    ("custom_hooks = [dict(type='DDPUnusedParamHook', gather_timeout=0)]\n",
     [], r'DDPUnusedParamHook: gather_timeout must be a positive, finite '
     r'number of seconds, got 0'),
    ("train_dataloader.update(dataset=dict(type='SafeNuScenesDatset'))\n", [],
     r"config: type 'SafeNuScenesDatset' is not in the mmdet3d::dataset "
     r"registry\. Check the spelling and default_scope = 'mmdet3d'; if "
     r'SafeNuScenesDatset comes from a plugin, import the plugin in the '
     r"config: custom_imports = dict\(imports=\['<plugin module>'\], "
     r'allow_failed_imports=False\); for this plugin: custom_imports = '
     r"dict\(imports=\['projects\.mmdet3d_plugin'\]"),
], ids=[
    'accum_0', 'accum_-1', 'flag_accum_0', 'loss_scale_0', 'loss_scale_-1',
    'loss_scale_foo', 'loss_scale_without_amp', 'unknown_preset',
    'hook_check_iters', 'hook_never_checks', 'hook_out_file',
    'hook_gather_timeout', 'unregistered_type'
])
def test_tool_prints_one_error_line(append, flags, match, toy_config_file,
                                    tmp_path, capsys):
    with open(toy_config_file, 'a') as f:
        f.write(append)
    line = _tool_error(
        capsys, [toy_config_file, '--work-dir', tmp_path / 'work', *flags])
    assert re.match(r'error: .*' + match, line), line
    # Nothing half-written: no checkpoint or pointer was created.
    work = tmp_path / 'work'
    assert not list(work.glob('*.pth')) if work.exists() else True
    assert not (work / 'last_checkpoint').exists()


def test_debug_flag_keeps_the_traceback(toy_config_file, tmp_path):
    with open(toy_config_file, 'a') as f:
        f.write(OPTIM.format(type='OptimWrapper',
                             extra=', accumulative_counts=0'))
    args = train_parser().parse_args(
        [str(toy_config_file), '--work-dir', str(tmp_path / 'w'),
         '--debug'])
    with pytest.raises(ValueError, match='accumulative_counts must be'):
        run_tool(train, args)


def test_hook_type_errors_are_user_errors():
    with pytest.raises(ValueError, match=r"check_iters must be an int >= 0, "
                       r"got '3' \(str\)"):
        HOOKS.build(dict(type='DDPUnusedParamHook', check_iters='3'))


@pytest.mark.launch
def test_train_script_without_plugin_import(tmp_path):
    """The real script: a config that names SafeNuScenesDataset without
    importing the plugin still resolves it (the tools import the plugin),
    and a missing data_root ends as one error line with exit status 1."""
    cfg = toy_config(
        max_iters=2, num_workers=0,
        dataset=dict(type='SafeNuScenesDataset',
                     data_root=str(tmp_path / 'nuscenes'),
                     ann_file='nuscenes_infos_train.pkl', pipeline=[]))
    cfg['custom_imports']['imports'].remove('projects.mmdet3d_plugin')
    config = write_toy_config(tmp_path / 'cfg.py', cfg)
    # launch: a fresh interpreter, which has not imported the plugin
    train = start_train(config, tmp_path / 'work')
    output, _ = train.communicate(timeout=300)
    assert train.returncode == 1, output[-3000:]
    assert 'Traceback' not in output, output[-3000:]
    errors = [line for line in output.splitlines()
              if line.startswith('error: ')]
    assert errors == [
        f"error: SafeNuScenesDataset: data_root "
        f"'{tmp_path / 'nuscenes'}' is not a folder (absolute: "
        f"'{tmp_path / 'nuscenes'}'); set data_root to the nuScenes folder "
        'that holds samples/, sweeps/ and the info .pkl files.'
    ], output[-3000:]
    assert not list((tmp_path / 'work').glob('*.pth'))
