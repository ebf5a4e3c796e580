"""tools/check_data.py and the doctor's data.files on a copy of the
generated nuScenes root with planted faults: a key frame truncated in the
middle of a point, a sweep deleted, a GT-database object truncated, a NaN in
a key frame and a camera image that is not one. The faults are planted in
files of the doctor's sample, so its check must find them too.

The checks run in this process, the tool on the broken root in a process
forked from this one (``fork_tool``); its answers before the heavy stack
loads are a real launch (marker ``launch``)."""
import copy
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from projects.mmdet3d_plugin.cli.run_tool import run_tool
from projects.mmdet3d_plugin.config.data_root import redirect_data_root
from projects.mmdet3d_plugin.config.loading import read_config
from projects.mmdet3d_plugin.data_check.check import (check_files,
                                                      file_problem,
                                                      sample_files)
from projects.mmdet3d_plugin.data_check.check_report import EXIT_USAGE
from projects.mmdet3d_plugin.data_check.data_files import DataFile, data_files
from projects.mmdet3d_plugin.data_check.tool import (check_data_parser, main,
                                                     run_from_args)
from projects.mmdet3d_plugin.doctor.checks import files as doctor_files
from projects.mmdet3d_plugin.doctor.context import (DoctorContext,
                                                    DoctorOptions)
from projects.mmdet3d_plugin.doctor.preflight import _checks
from tests.helpers.train_tool import fork_tool

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = str(REPO / 'configs' / 'centerpoint' /
               'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')
SYNTHETIC = str(REPO / 'configs' / 'centerpoint' /
                'centerpoint_pillar_synthetic.py')
CAMERAS = ('CAM_FRONT', 'CAM_FRONT_RIGHT', 'CAM_FRONT_LEFT', 'CAM_BACK',
           'CAM_BACK_LEFT', 'CAM_BACK_RIGHT')


@pytest.fixture(scope='module')
def pillar02():
    return read_config(PILLAR02)[0]


@pytest.fixture(scope='module')
def broken(nus_synthetic, tmp_path_factory, pillar02):
    """A copy of the root with the faults planted; what was planted."""
    root = tmp_path_factory.mktemp('data_check') / 'nus'
    shutil.copytree(nus_synthetic, root, symlinks=False)
    files = data_files(pillar02, data_root=str(root))
    sample = sample_files(files, doctor_files.PER_KIND, doctor_files.SEED)
    with open(root / 'nuscenes_infos_train.pkl', 'rb') as f:
        train_tokens = {i['token'] for i in pickle.load(f)['data_list']}

    def first(kind, *, train=None, skip=()):
        return next(f for f in sample if f.kind == kind and f not in skip
                    and (train is None or (f.token in train_tokens) == train))

    lidar, sweep = first('lidar', train=True), first('sweep')
    gt, nan = first('gt_database'), first('lidar', train=False)
    size = os.path.getsize(lidar.path)
    os.truncate(lidar.path, size - 8)  # two floats into the last point
    os.remove(sweep.path)
    os.truncate(gt.path, os.path.getsize(gt.path) - 4)
    values = np.fromfile(nan.path, dtype=np.float32)
    values[7] = np.nan
    values.tofile(nan.path)
    with open(root / 'nuscenes_infos_val.pkl', 'rb') as f:
        val = pickle.load(f)['data_list']
    image = root / 'samples' / 'CAM_FRONT' / \
        val[0]['images']['CAM_FRONT']['img_path']
    image.write_bytes(b'not a jpeg')
    return dict(root=root, lidar=lidar, sweep=sweep, gt=gt, nan=nan,
                image=str(image), lidar_size=size - 8)


def _problems(report):
    return {b.file.path: b.problem for b in report.broken}


def test_stat_finds_truncated_missing_and_gt_database(broken, pillar02):
    report = check_files(data_files(pillar02, data_root=str(broken['root'])),
                         workers=3)
    assert _problems(report) == {
        broken['lidar'].path:
        f'size {broken["lidar_size"]} bytes is not a multiple of 20 '
        '(5 float32 per point)',
        broken['sweep'].path: 'missing',
        broken['gt'].path:
        f'size {os.path.getsize(broken["gt"].path)} bytes is not a '
        'multiple of 20 (5 float32 per point)',
    }
    assert report.broken_counts == {'lidar': 1, 'sweep': 1,
                                    'gt_database': 1}
    assert report.exit_code == 1 and not report.read
    gt = next(b.file for b in report.broken if b.file.kind == 'gt_database')
    assert gt.token and gt.class_name in Path(gt.path).name


def test_read_finds_a_nan_that_stat_passes(broken, pillar02):
    files = data_files(pillar02, data_root=str(broken['root']))
    nan = broken['nan']
    assert file_problem(nan) == ''
    report = check_files(files, read=True, workers=2)
    problems = _problems(report)
    assert problems[nan.path] == '1 non-finite value'
    assert len(problems) == 4 and problems[broken['sweep'].path] == 'missing'
    assert report.counts == check_files(files).counts


def test_read_decodes_images(broken, pillar02):
    cfg = copy.deepcopy(pillar02)
    dataset = cfg.val_dataloader.dataset
    dataset.modality = dict(use_lidar=True, use_camera=True)
    dataset.data_prefix = dict(dataset.data_prefix,
                               **{cam: f'samples/{cam}' for cam in CAMERAS})
    dataset.pipeline.insert(0, dict(type='LoadMultiViewImageFromFiles'))
    images = [f for f in data_files(cfg, data_root=str(broken['root']),
                                    sections=['val_dataloader'])
              if f.kind == 'image']
    assert len(images) == 6 * 20
    assert check_files(images).ok
    assert _problems(check_files(images, read=True)) == {
        broken['image']: 'not a decodable image'}


@pytest.mark.parametrize('config, kinds', [
    (SYNTHETIC, {'lidar', 'sweep'}),
    (PILLAR02, {'lidar', 'sweep', 'gt_database'}),
], ids=['synthetic', 'pillar02'])
def test_clean_root_passes(config, kinds, nus_synthetic, tmp_path, capsys):
    out = tmp_path / 'report.json'
    assert main([config, '--data-root', str(nus_synthetic), '--json',
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert 'broken files' not in printed and 'files exist' in printed
    report = json.loads(out.read_text())
    assert report['broken_files'] == 0 and report['broken'] == []
    assert set(report['counts']) == kinds
    assert report['data_root'] == str(nus_synthetic)
    assert all(c['files'] > 0 for c in report['counts'].values())
    assert report['files'] == sum(c['files']
                                  for c in report['counts'].values())


def test_tool_names_broken_files_and_samples(broken, tmp_path):
    out = tmp_path / 'data_check.json'
    tool = fork_tool(  # library: the data check, through its script
        'check_data', PILLAR02, '--data-root', broken['root'], '--json', out,
        '--workers', '2')
    output, _ = tool.communicate(timeout=600)
    assert tool.returncode == 1, output[-6000:]
    lines = output.splitlines()
    for kind in ('lidar', 'sweep', 'gt'):
        file = broken[kind]
        line = next(line for line in lines if file.path in line)
        assert line.startswith(file.kind) and file.token in line, line
    assert 'missing' in next(line for line in lines
                             if broken['sweep'].path in line)
    assert '\r' not in output  # no progress bar when not a terminal
    report = json.loads(out.read_text())
    assert report['broken_files'] == 3 and report['mode'] == 'stat'
    listed = {b['path']: b for b in report['broken']}
    assert set(listed) == {broken[k].path for k in ('lidar', 'sweep', 'gt')}
    assert listed[broken['sweep'].path]['tokens'] == list(
        broken['sweep'].tokens)
    assert listed[broken['lidar'].path]['tokens'][0] == broken['lidar'].token
    gt = listed[broken['gt'].path]
    assert (gt['class_name'], gt['image_idx']) == (broken['gt'].class_name,
                                                   broken['gt'].image_idx)
    assert report['counts']['sweep']['broken'] == 1


@pytest.mark.launch
def test_help_and_a_missing_config_before_the_stack(tmp_path):
    """``--help`` answers, and a missing config is one error line with
    status 2, before torch, mmcv or mmdet3d load."""
    # launch: what a fresh interpreter running the script loads
    probe = ('import json, runpy, sys\n'
             'sys.argv = sys.argv[1:]\n'
             'try:\n'
             "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             'except SystemExit as e:\n'
             '    code = e.code\n'
             "print(json.dumps([m for m in ('torch', 'mmcv', 'mmdet3d', "
             "'cv2') if m in sys.modules]))\n"
             'sys.exit(code)\n')
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop('MMDET3D_PLUGIN_DEBUG', None)
    missing = tmp_path / 'missing.py'
    runs = {}
    for args in (['--help'], [missing, '--json', tmp_path / 'out.json']):
        proc = subprocess.run(
            [sys.executable, '-c', probe, 'tools/check_data.py', *args],
            cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
        assert json.loads(proc.stdout.splitlines()[-1]) == [], args
        runs[args[0]] = proc
    assert runs['--help'].returncode == 0
    assert 'usage: check_data.py' in runs['--help'].stdout
    proc = runs[missing]
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines()
              if line.startswith('error: ')]
    assert errors == [
        f"error: config: file '{missing}' does not exist; give the path of "
        'a config file (e.g. configs/centerpoint/<name>.py) or a packaged '
        "config name such as 'mmdet3d::centerpoint/<name>.py'."
    ], proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not (tmp_path / 'out.json').exists()


def test_missing_info_file_is_status_2(tmp_path, capsys):
    """The tool's error path in this process (run_tool, as the script)."""
    args = check_data_parser().parse_args(
        [SYNTHETIC, '--data-root', str(tmp_path), '--json',
         str(tmp_path / 'out.json')])
    with pytest.raises(SystemExit) as info:
        run_tool(run_from_args, args, status=EXIT_USAGE)
    assert info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith('error: ')]
    assert errors == [
        f"error: data_check: info file '{tmp_path}/nuscenes_infos_train.pkl'"
        ' does not exist; create the info files with `python '
        f'tools/create_data.py nuscenes --root-path {tmp_path} --out-dir '
        f'{tmp_path} --extra-tag nuscenes`, or point the config at the data '
        'with --data-root DIR.']


def test_sample_is_deterministic_per_kind(pillar02, nus_synthetic):
    files = data_files(pillar02, data_root=str(nus_synthetic))
    sample = sample_files(files, per_kind=7, seed=3)
    assert sample == sample_files(files, per_kind=7, seed=3)
    assert sample != sample_files(files, per_kind=7, seed=4)
    kinds = [f.kind for f in sample]
    assert kinds == ['lidar'] * 7 + ['sweep'] * 7 + ['gt_database'] * 7
    order = {f: i for i, f in enumerate(files)}
    assert [order[f] for f in sample] == sorted(order[f] for f in sample)
    few = [DataFile('image', f'/x/{i}.jpg', None, ('t', )) for i in range(3)]
    assert sample_files(few, per_kind=7) == few
    with pytest.raises(ValueError, match='per_kind must be an integer >= 1'):
        sample_files(files, per_kind=0)


@pytest.mark.parametrize('state, status', [('clean', 'pass'),
                                           ('broken', 'fail')])
def test_doctor_reads_a_sample(state, status, broken, nus_synthetic,
                               pillar02, tmp_path):
    root = broken['root'] if state == 'broken' else nus_synthetic
    ctx = DoctorContext(DoctorOptions(config=PILLAR02, data_root=str(root)),
                        tmp_dir=str(tmp_path))
    ctx.provide('cfg', redirect_data_root(copy.deepcopy(pillar02), root))
    registered = {name: (fn, needs) for name, fn, needs, _ in _checks()}
    fn, needs = registered['data.files']
    assert fn is doctor_files.check_data_files and needs == ('cfg', )
    [line] = ctx.run('data.files', fn, needs=needs)
    assert line.status == status, line
    if status == 'pass':
        assert 'none broken' in line.detail
        return
    # The key frame, sweep and NaN key frame come first, in the order of
    # the files; the sweep is missing.
    assert line.detail.startswith('4 of 150 sampled files broken: ')
    assert broken['lidar'].path in line.detail
    assert f'{broken["sweep"].path} (sweep, sample ' in line.detail
    assert '(+1 more)' in line.detail
    assert line.fix.startswith(
        f'`python tools/check_data.py {PILLAR02} --data-root {root}`')
