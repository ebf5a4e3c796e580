"""tools/doctor.py: one preflight that finds the known failures.

Toy configs (a registered model, dataset and transforms below, built by the
real Runner, loaded by real DataLoader workers) carry one planted fault each,
run by ``run_doctor`` in this process; the generated nuScenes data with the
small CenterPoint config is the clean run through the script, in a process
forked from this one (``fork_tool``), as is the full-size config's first
batch (marker ``full_size``). Real launches (marker ``launch``): the clean
toy run's spawn DataLoader worker (a fresh interpreter by definition) and
the full-size config without the np.long fix (its off switch is read when a
fresh interpreter imports the plugin).
"""
import json
import logging
import multiprocessing
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import BaseDataset
from mmengine.logging import MMLogger
from mmengine.model import BaseModel
from torch import nn

import projects.mmdet3d_plugin  # noqa: F401  registers the plugin
from tests.helpers.gpu import requires_no_cuda
from mmdet3d.registry import DATASETS, MODELS, TRANSFORMS
from projects.mmdet3d_plugin.compat.inventory import OFF_VARIABLE
from projects.mmdet3d_plugin.compat.python_fork import fork_deadlock
from projects.mmdet3d_plugin.constants import CPU_BF16_ENV
from projects.mmdet3d_plugin.doctor.checks import env as env_checks
from projects.mmdet3d_plugin.doctor.preflight import run_doctor
from projects.mmdet3d_plugin.doctor.tool import (doctor_parser, main,
                                                 merge_train_args)
from projects.mmdet3d_plugin.doctor.context import (DoctorContext,
                                                    DoctorOptions, passed)
from projects.mmdet3d_plugin.doctor.checks.registry_types import config_types
from tests.helpers.train_tool import fork_tool, start_tool

# Doctor runs on real configs.
pytestmark = pytest.mark.slow


REPO = Path(__file__).resolve().parents[2]
SYNTHETIC = REPO / 'configs' / 'centerpoint' / \
    'centerpoint_pillar_synthetic.py'
VOXEL = REPO / 'configs' / 'centerpoint' / \
    'centerpoint_voxel01_second_secfpn_8xb4-cyclic-20e_nus-3d.py'
PILLAR02 = REPO / 'configs' / 'centerpoint' / \
    'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py'
AREAS = ('env', 'config', 'data', 'model', 'optim', 'dist')


@MODELS.register_module()
class DoctorToyModel(BaseModel):
    """Linear + BatchNorm regressor, optionally with a dead head or a branch
    used only by samples of kind 'b'.

    Args:
        dead_head (bool): Add a layer the loss never uses. Defaults to False.
        branch (bool): Route kind-'b' samples through an extra layer.
            Defaults to False.
    """

    def __init__(self, dead_head: bool = False, branch: bool = False):
        super().__init__()
        self.stem = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 1)
        self.dead_head = nn.Linear(8, 3) if dead_head else None
        self.branch_b = nn.Linear(8, 8) if branch else None

    def forward(self, inputs, kind=None, mode='loss'):
        x = self.norm(self.stem(torch.stack(inputs))).relu()
        if self.branch_b is not None and 'b' in kind:
            x = self.branch_b(x)
        loss = self.head(x).pow(2).mean()
        return dict(loss=loss) if mode == 'loss' else [loss]


@DATASETS.register_module()
class DoctorToyDataset(BaseDataset):
    """Reads a 1.x info file of ``{'x': [4 floats], 'kind': 'a' | 'b'}``."""

    def parse_data_info(self, raw_data_info):
        return dict(raw_data_info)


@TRANSFORMS.register_module()
class DoctorToTensor:
    """Turns the info into model inputs."""

    def __call__(self, results):
        return dict(inputs=torch.tensor(results['x']), kind=results['kind'])


@TRANSFORMS.register_module()
class DoctorLambdaTransform:
    """Holds a lambda, as hand-written pipeline steps often do."""

    def __init__(self):
        self.fn = lambda results: results

    def __call__(self, results):
        return self.fn(results)


@TRANSFORMS.register_module()
class DoctorNaNTransform:
    """Puts a NaN into every sample's features, as a broken file would."""

    def __call__(self, results):
        results['x'] = [float('nan')] + list(results['x'][1:])
        return results


def write_infos(path: Path, legacy: bool = False, size: int = 16) -> Path:
    """A 1.x info file (or a 0.x one with ``legacy``) of ``size`` samples."""
    gen = torch.Generator().manual_seed(0)
    # Kinds a, a, b, b, a, a, ...: unshuffled batches of 2 hold one kind.
    samples = [
        dict(x=torch.randn(4, generator=gen).tolist(),
             kind='a' if (i // 2) % 2 == 0 else 'b') for i in range(size)
    ]
    content = (dict(infos=samples, metadata=dict(version='toy'))
               if legacy else dict(metainfo=dict(version='toy'),
                                   data_list=samples))
    path.write_bytes(pickle.dumps(content))
    return path


def toy_config(tmp_path: Path, *, model_type: str = 'DoctorToyModel',
               model: str = '', pipeline: str = '',
               start_method: str = 'fork', extra: str = '',
               ann_file: str = 'infos.pkl', batch_size: int = 4,
               shuffle: bool = True) -> str:
    """Write a toy training config and its info file; return its path."""
    write_infos(tmp_path / 'infos.pkl')
    text = f"""
default_scope = 'mmdet3d'
custom_imports = dict(imports=['projects.mmdet3d_plugin'],
                      allow_failed_imports=False)
model = dict(type={model_type!r}, {model})
train_dataloader = dict(
    batch_size={batch_size}, num_workers=1,
    sampler=dict(type='DefaultSampler', shuffle={shuffle}),
    dataset=dict(type='DoctorToyDataset', data_root={str(tmp_path)!r},
                 ann_file={ann_file!r},
                 pipeline=[{pipeline}dict(type='DoctorToTensor')]))
train_cfg = dict(type='IterBasedTrainLoop', max_iters=10)
optim_wrapper = dict(type='OptimWrapper',
                     optimizer=dict(type='SGD', lr=0.01))
auto_scale_lr = dict(enable=False, base_batch_size={batch_size})
env_cfg = dict(mp_cfg=dict(mp_start_method={start_method!r}))
default_hooks = dict(checkpoint=None)
{extra}
"""
    path = tmp_path / 'toy_config.py'
    path.write_text(text)
    return str(path)


@pytest.fixture(scope='module')
def clean_toy_report(tmp_path_factory):
    # launch: real spawn workers (fresh interpreters) import this module to
    # unpickle the toy dataset.
    tmp_path = tmp_path_factory.mktemp('clean_toy')
    config = toy_config(
        tmp_path,
        start_method='spawn',
        extra=f"work_dir = {str(tmp_path / 'work_dir')!r}")
    before = multiprocessing.get_start_method(allow_none=True)
    report = run_doctor(config, iters=3)
    after = multiprocessing.get_start_method(allow_none=True)
    return tmp_path, report, (before, after)


@pytest.mark.launch
def test_clean_toy_config_passes(clean_toy_report):
    tmp_path, report, _ = clean_toy_report
    assert report.exit_code == 0, report.format()
    assert not [r for r in report.results if r.status == 'fail']
    names = [r.check for r in report.results]
    for check in ('env.mmcv_ops', 'config.types', 'config.data_paths',
                  'config.info_files', 'data.pickle.train',
                  'data.first_batch', 'model.train', 'model.unused_params',
                  'optim.amp', 'optim.lr', 'optim.accumulation_bn',
                  'optim.loss', 'dist.backend', 'dist.world_size',
                  'dist.timeouts'):
        assert report.get(check).status == 'pass', report.format()
    # Spawn workers: CPython gh-112275 does not reach them.
    fork = report.get('env.fork_deadlock')
    assert fork.status == 'pass'
    assert ('not reached here' in fork.detail) == (fork_deadlock() is not
                                                    None)
    versions = [r for r in report.results if r.check.startswith('env.ver')]
    assert {r.check for r in versions} >= {
        'env.version.mmcv', 'env.version.mmengine', 'env.version.mmdet3d'}
    assert all(r.status == 'pass' for r in versions), versions
    # Grouped by area, in the documented order.
    areas = [n.split('.')[0] for n in names]
    assert areas == sorted(areas, key=AREAS.index)
    # The user's work_dir is never written to.
    assert not (tmp_path / 'work_dir').exists()
    assert not (REPO / 'work_dirs' / 'toy_config').exists()


@pytest.mark.launch
def test_spawn_workers_and_process_state(clean_toy_report):
    _, report, (before, after) = clean_toy_report
    assert 'for each of 1 spawn worker(s)' in report.get(
        'data.pickle.train').detail
    assert 'from 1 spawn worker(s)' in report.get('data.first_batch').detail
    # The Runner set the start method; the doctor put it back.
    assert after == before
    assert not torch.distributed.is_initialized()
    # The caller's logs are not swallowed by the doctor's quiet loggers.
    assert MMLogger.get_current_instance().isEnabledFor(logging.INFO)
    assert not torch.distributed.is_initialized()


# (case, config arguments, run_doctor arguments, failing check, status,
#  text in detail, text in fix)
FAULTS = [
    ('unpicklable transform under spawn',
     dict(pipeline="dict(type='DoctorLambdaTransform'), ",
          start_method='spawn'), {}, 'data.pickle.train', 'fail',
     'pipeline.transforms[0].fn (function', 'define it at module level'),
    ('same transform under fork', dict(
        pipeline="dict(type='DoctorLambdaTransform'), "), {},
     'data.pickle.train', 'warn', 'spawn / forkserver would fail',
     'define it at module level'),
    ('dead head under DDP', dict(model='dead_head=True'),
     dict(world_size=2), 'model.unused_params', 'fail',
     'dead_head.weight', 'find_unused_parameters = True'),
    ('dead head, one process', dict(model='dead_head=True'), {},
     'model.unused_params', 'warn', 'harmless in one process',
     'dead_head.weight'),
    ('branch used by some batches only',
     dict(model='branch=True', batch_size=2, shuffle=False),
     dict(launcher='pytorch'), 'model.unused_params', 'fail',
     'in some iterations only (branch_b.weight', 'data-dependent'),
    ('find_unused_parameters without need',
     dict(extra='find_unused_parameters = True'), dict(world_size=2),
     'model.unused_params', 'warn', 'True configured, False needed',
     'find_unused_parameters = False'),
    ('missing info file', dict(ann_file='no_such_infos.pkl'), {},
     'config.data_paths', 'fail', 'no_such_infos.pkl',
     'tools/create_data.py'),
    ('0.x info file', dict(ann_file='legacy_infos.pkl'), {},
     'config.info_files', 'fail', "legacy_infos.pkl: 0.x",
     'regenerate it with tools/create_data.py'),
    ('accumulation with BatchNorm', dict(extra="presets = ['grad_accum_x2']"),
     {}, 'optim.accumulation_bn', 'warn', 'x2 with 1 BatchNorm layer(s)',
     'batch_size'),
    ('unresolvable type', dict(model_type='DoctorToyModl'),
     {}, 'config.types', 'fail', "'DoctorToyModl' is not registered in "
     "MODELS; did you mean 'DoctorToyModel'", 'custom_imports'),
    ('LR not scaled for the effective batch', {}, dict(world_size=2),
     'optim.lr', 'warn', 'batch of 8',
     'auto_scale_lr = dict(enable=True, base_batch_size=4)'),
    ('world size beyond this machine', {}, dict(world_size=4096),
     'dist.world_size', 'fail', '4096', 'start at most'),
    ('NaN in the data', dict(pipeline="dict(type='DoctorNaNTransform'), "),
     {}, 'model.train', 'fail', 'non-finite step: iteration 1 found by the '
     'doctor (training here is not guarded) (gradient norm not read); rank '
     '0: loss=nan; non-finite inputs: inputs; first non-finite module: '
     'stem',
     'NonFiniteGuardHook skips such steps'),
]


@pytest.mark.parametrize(
    'case,config_args,doctor_args,check,status,detail,fix', FAULTS,
    ids=[f[0] for f in FAULTS])
def test_planted_fault_is_caught(tmp_path, case, config_args, doctor_args,
                                 check, status, detail, fix):
    write_infos(tmp_path / 'legacy_infos.pkl', legacy=True)
    config = toy_config(tmp_path, **config_args)
    report = run_doctor(config, iters=2, **doctor_args)
    line = report.get(check)
    assert line.status == status, report.format()
    assert detail in line.detail, line
    assert fix in line.fix, line
    assert report.exit_code == (1 if status == 'fail' else 0), \
        report.format()


def test_one_failure_does_not_hide_the_others(tmp_path):
    # The lambda stops the spawn workers, the model has a dead head: both
    # are reported, and training still runs (in this process).
    config = toy_config(
        tmp_path,
        model='dead_head=True',
        pipeline="dict(type='DoctorLambdaTransform'), ",
        start_method='spawn')
    report = run_doctor(config, iters=2, world_size=2)
    assert report.get('data.pickle.train').status == 'fail'
    assert report.get('data.first_batch').status == 'fail'
    assert 'num_workers=0' in report.get('model.train').detail
    assert report.get('model.unused_params').status == 'fail'
    assert report.get('optim.loss').status == 'pass'


def test_unresolvable_type_skips_what_needs_the_model(tmp_path):
    config = toy_config(tmp_path, model_type='NoSuchModel')
    report = run_doctor(config, iters=1)
    assert report.get('model.build').status == 'fail'
    assert 'NoSuchModel' in report.get('model.build').detail
    for check in ('model.train', 'model.unused_params', 'optim.loss'):
        line = report.get(check)
        assert line.status == 'warn'
        assert line.detail.startswith('skipped:')
        assert 'model.build' in line.detail
    assert report.get('data.first_batch').status == 'pass'


@requires_no_cuda
@pytest.mark.parametrize('extra,kwargs', [
    ("presets = ['fp16']", {}),
    ('', dict(amp='fp16')),
], ids=['preset', 'train flag'])
@pytest.mark.parametrize('cpu_bf16', ['native', 'emulated'])
def test_fp16_without_cuda_fails_and_training_still_runs(
        tmp_path, monkeypatch, extra, kwargs, cpu_bf16):
    monkeypatch.setenv(CPU_BF16_ENV, cpu_bf16)
    config = toy_config(tmp_path, extra=extra)
    report = run_doctor(config, iters=2, **kwargs)
    line = report.get('optim.amp')
    assert line.status == 'fail'
    assert 'CUDA' in line.detail
    assert '--amp fp32' in line.fix
    assert ("--amp bf16 (preset 'bf16'" in line.fix) == (
        cpu_bf16 == 'native')
    assert report.get('model.train').status == 'pass'
    assert 'float32, since optim.amp failed' in report.get(
        'model.train').detail


def test_train_flags_are_applied_as_tools_train_does(tmp_path):
    config = toy_config(tmp_path)
    report = run_doctor(config, iters=2, accum=2, auto_scale_lr=True)
    assert '--accum --auto-scale-lr' in report.get('config.load').detail
    assert report.get('optim.accumulation_bn').status == 'warn'
    lr = report.get('optim.lr')
    assert lr.status == 'pass', lr
    # SGD lr 0.01 tuned for 4 samples; 1 process x 4 x accumulation 2 = 8.
    assert 'the run uses 0.02 (auto_scale_lr on)' in lr.detail


def test_config_is_prepared_as_tools_train_prepares_it(tmp_path):
    from projects.mmdet3d_plugin.cli.prepare import prepare_run
    from projects.mmdet3d_plugin.doctor.checks.config import check_load
    config = toy_config(tmp_path)
    flags = dict(cfg_options={'optim_wrapper.accumulative_counts': 3,
                              'train_dataloader.dataset.data_root': '/x/'},
                 amp='bf16', accum=2, data_root=str(tmp_path / 'root'),
                 auto_scale_lr=True)
    ctx = DoctorContext(DoctorOptions(config=config, **flags), str(tmp_path))
    assert check_load(ctx).status == 'pass'
    cfg = prepare_run(config, 'train', work_dir=str(tmp_path), **flags)
    assert ctx.cfg.to_dict() == cfg.to_dict()
    assert ctx.cfg.optim_wrapper.accumulative_counts == 2
    assert ctx.cfg.train_dataloader.dataset.data_root == \
        str(tmp_path / 'root') + '/'


def test_timeouts_fail_with_the_error_of_tools_train(tmp_path):
    from projects.mmdet3d_plugin.cli.prepare import prepare_run
    from projects.mmdet3d_plugin.doctor.checks.dist import check_timeouts
    config = toy_config(tmp_path, extra=(
        "custom_hooks = [dict(type='DistWatchdogHook', timeout=2000)]\n"
        "val_evaluator = dict(type='SafeNuScenesMetric', "
        "dist_wait_timeout=0)"))
    with pytest.raises(ValueError) as stopped:
        prepare_run(config, 'train', work_dir=str(tmp_path))
    ctx = DoctorContext(DoctorOptions(config=config), str(tmp_path))
    ctx.provide('cfg', prepare_run(config, 'train', work_dir=str(tmp_path),
                                   stop=False))
    line = check_timeouts(ctx)
    assert line.status == 'fail', line
    watchdog, wait = str(stopped.value).split('; ')
    assert line.detail == '; '.join(
        p.split('. Fix: ')[0] for p in (watchdog, wait))
    assert line.fix == '; '.join(
        p.split('. Fix: ')[1] for p in (watchdog, wait))
    assert 'DistWatchdogHook: timeout=2000 s' in line.detail
    assert "raise env_cfg.dist_cfg.timeout above" in line.fix


def test_bf16_on_this_machine_passes(tmp_path, monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, 'native')
    config = toy_config(tmp_path, extra="presets = ['bf16']")
    report = run_doctor(config, iters=1)
    assert report.get('optim.amp').status == 'pass', report.format()
    assert 'bfloat16' in report.get('optim.amp').detail
    assert report.get('optim.bf16_speed').status == 'pass'


@requires_no_cuda
def test_bf16_on_an_emulating_cpu_warns_with_the_measured_slowdown(
        tmp_path, monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, 'emulated')
    config = toy_config(tmp_path, extra="presets = ['bf16']")
    report = run_doctor(config, iters=1)
    assert 'bfloat16 (emulated, slow)' in report.get('optim.amp').detail
    speed = report.get('optim.bf16_speed')
    assert speed.status == 'warn', report.format()
    assert 'measured on stem (Linear 4->8' in speed.detail
    assert 'x the float32 time)' in speed.detail
    assert speed.fix.startswith('train in float32 with --amp fp32')
    assert 'in float32, since bfloat16 is emulated' in report.get(
        'model.train').detail


def test_fp32_flag_over_an_fp16_preset_passes(tmp_path):
    config = toy_config(tmp_path, extra="presets = ['fp16']")
    report = run_doctor(config, iters=1, amp='fp32')
    assert report.get('optim.amp').status == 'pass', report.format()
    assert 'OptimWrapper trains in float32' in report.get('optim.amp').detail


def test_cli_writes_json_and_exit_code(tmp_path, capsys):
    config = toy_config(tmp_path, model='dead_head=True')
    out = tmp_path / 'reports' / 'doctor.json'
    code = main([config, '--iters', '2', '--world-size', '2', '--json',
                 str(out)])
    assert code == 1
    printed = capsys.readouterr().out
    assert '[FAIL] model.unused_params' in printed
    assert 'fix: ' in printed
    lines = json.loads(out.read_text())
    assert isinstance(lines, list)
    for line in lines:
        assert {'check', 'status', 'detail', 'fix'} <= set(line)
        assert line['status'] in ('pass', 'warn', 'fail')
        assert line['status'] == 'pass' or line['fix']
    unused = [x for x in lines if x['check'] == 'model.unused_params'][0]
    assert unused['status'] == 'fail'


@pytest.mark.parametrize('kwargs,match', [
    (dict(iters=0), 'iters must be an integer >= 1'),
    (dict(world_size=0), 'world_size must be an integer >= 1'),
    (dict(launcher='ssh'), 'launcher must be one of'),
])
def test_run_doctor_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_doctor(str(SYNTHETIC), **kwargs)


def test_missing_config_fails_and_the_rest_is_skipped(tmp_path):
    report = run_doctor(str(tmp_path / 'no_such_config.py'), iters=1)
    load = report.get('config.load')
    assert load.status == 'fail'
    assert 'no_such_config.py' in load.detail
    assert report.get('env.mmcv_ops').status == 'pass'
    for check in ('config.types', 'data.first_batch', 'model.train',
                  'optim.amp', 'dist.world_size'):
        assert report.get(check).detail.startswith('skipped: ')
        assert report.get(check).detail.endswith(
            ' missing (config.load failed)')
    assert report.get('config.types').detail == \
        'skipped: cfg missing (config.load failed)'
    assert report.exit_code == 1


def test_crashing_check_fails_with_exception_and_dependents_skip(tmp_path):
    ctx = DoctorContext(DoctorOptions(config='x.py'), str(tmp_path))

    def crash(ctx):
        raise KeyError('no such key')

    ctx.run('area.crash', crash, provides=('thing', ))
    ctx.run('area.after', lambda c: passed('area.after', 'ok'),
            needs=('thing', ))
    ctx.run('area.independent', lambda c: passed('area.independent', 'ok'))
    crashed, after, independent = ctx.results
    assert crashed.status == 'fail'
    assert "KeyError: 'no such key'" in crashed.detail
    assert crashed.fix
    assert after.status == 'warn'
    assert after.detail == 'skipped: thing missing (area.crash failed)'
    assert independent.status == 'pass'


@pytest.fixture(scope='module')
def synthetic_refs():
    from projects.mmdet3d_plugin import load_config
    return {p: r for p, r, _ in config_types(load_config(str(SYNTHETIC)))}


@pytest.mark.parametrize('path,registry', [
    ('model.type', 'MODELS'),
    ('model.pts_bbox_head.bbox_coder.type', 'TASK_UTILS'),
    ('model.pts_backbone.norm_cfg.type', 'MODELS'),
    ('train_dataloader.dataset.type', 'DATASETS'),
    ('train_dataloader.dataset.pipeline[0].type', 'TRANSFORMS'),
    ('val_dataloader.dataset.pipeline[2].transforms[0].type', 'TRANSFORMS'),
    ('train_dataloader.sampler.type', 'DATA_SAMPLERS'),
    ('val_evaluator.type', 'METRICS'),
    ('default_hooks.checkpoint.type', 'HOOKS'),
    ('optim_wrapper.type', 'OPTIM_WRAPPERS'),
    ('optim_wrapper.optimizer.type', 'OPTIMIZERS'),
    ('param_scheduler[0].type', 'PARAM_SCHEDULERS'),
    ('train_cfg.type', 'LOOPS'),
    ('visualizer.vis_backends[0].type', 'VISBACKENDS'),
    ('runner_type', 'RUNNERS'),
])
def test_types_map_to_the_runners_registries(synthetic_refs, path,
                                             registry):
    assert synthetic_refs[path] == registry


def test_spconv_runs_for_sparse_models(tmp_path):
    from projects.mmdet3d_plugin import load_config
    from projects.mmdet3d_plugin.doctor.checks.env import check_spconv
    ctx = DoctorContext(DoctorOptions(config=str(VOXEL)), str(tmp_path))
    ctx.provide('cfg', load_config(str(VOXEL)))
    line = check_spconv(ctx)
    assert line.status == 'pass', line
    assert 'runs a sparse convolution' in line.detail
    assert 'SparseEncoder' in line.detail


def test_script_on_small_centerpoint_passes(nus_synthetic, tmp_path):
    work_dir = tmp_path / 'work_dir'
    out = tmp_path / 'doctor.json'
    doctor = fork_tool(  # library: the doctor's checks, through its script
        'doctor', SYNTHETIC, '--iters', '1', '--data-root', nus_synthetic,
        '--json', out, '--cfg-options', f'work_dir={work_dir}')
    output, _ = doctor.communicate(timeout=600)
    assert doctor.returncode == 0, output[-8000:]
    lines = json.loads(out.read_text())
    by_name = {x['check']: x for x in lines}
    assert not [x for x in lines if x['status'] == 'fail'], output
    for check in ('config.info_files', 'data.first_batch', 'model.train',
                  'model.unused_params', 'optim.loss'):
        assert by_name[check]['status'] == 'pass', by_name[check]
    assert '1.x' in by_name['config.info_files']['detail']
    assert not work_dir.exists()


def _doctor_args(*argv):
    return merge_train_args(doctor_parser().parse_args(['cfg.py', *argv]))


def test_train_args_are_checked_as_training_runs_them():
    args = _doctor_args('--world-size', '2', '--train-args', '--amp', 'bf16',
                        '--accum', '4', '--work-dir', 'w', '--resume',
                        '--cfg-options', 'a.b=1', '--auto-scale-lr')
    assert (args.amp, args.accum, args.auto_scale_lr) == ('bf16', 4, True)
    assert args.cfg_options == {'a.b': 1} and args.world_size == 2
    args = _doctor_args('--cfg-options', 'a=1', 'b=2', '--train-args',
                        '--cfg-options', 'b=3')
    assert args.cfg_options == {'a': 1, 'b': 3}
    assert _doctor_args('--accum', '2', '--train-args').accum == 2


def test_train_args_that_disagree_or_training_rejects_are_refused(capsys):
    with pytest.raises(ValueError, match='--accum 2 differs from --accum 4'):
        _doctor_args('--accum', '2', '--train-args', '--accum', '4')
    with pytest.raises(SystemExit):
        _doctor_args('--train-args', '--no-such-flag')
    assert 'tools/train.py flags' in capsys.readouterr().err


@pytest.mark.full_size
@pytest.mark.parametrize('off', [
    False, pytest.param(True, marks=pytest.mark.launch)
], ids=['fix-on', 'fix-off'])
def test_shipped_full_config_first_batch(off, nus_synthetic, tmp_path):
    """The full-size pillar02 config's first batch (ObjectSample included)
    passes; without the np.long fix the check fails naming mmdet3d #2821
    (stock ObjectSample: the config's FastObjectSample does not need it)."""
    out = tmp_path / 'doctor.json'
    args = [PILLAR02, '--iters', '1', '--data-root', nus_synthetic,
            '--json', out, '--cfg-options', 'train_dataloader.batch_size=1',
            'train_dataloader.num_workers=1',
            # The generated data is v1.0-mini (config.data_version says so).
            'val_dataloader.dataset.metainfo.version=v1.0-mini',
            'test_dataloader.dataset.metainfo.version=v1.0-mini']
    if off:
        # launch: the switch is read when a fresh interpreter imports the
        # plugin
        doctor = start_tool(
            'doctor', *args, 'train_dataloader.dataset.dataset.pipeline.3.'
            'type=ObjectSample', **{OFF_VARIABLE: 'dbsampler_np_long'})
    else:
        doctor = fork_tool('doctor', *args)  # library: the doctor's checks
    output, _ = doctor.communicate(timeout=600)
    by_name = {x['check']: x for x in json.loads(out.read_text())}
    first_batch = by_name['data.first_batch']
    if not off:
        assert doctor.returncode == 0, output[-4000:]
        assert by_name['config.data_version']['status'] == 'pass'
        assert first_batch['status'] == 'pass', first_batch
        return
    assert doctor.returncode == 1
    assert first_batch['status'] == 'fail'
    assert "module 'numpy' has no attribute 'long'" in first_batch['detail']
    assert 'mmdet3d #2821' in first_batch['detail']
    assert 'dbsampler_np_long' in first_batch['fix']


@pytest.mark.parametrize('version,method,workers,status', [
    ((3, 11, 7), 'fork', 2, 'warn'),
    ((3, 11, 7), 'forkserver', 2, 'pass'),
    ((3, 11, 7), 'fork', 0, 'pass'),
    ((3, 11, 10), 'fork', 2, 'pass'),
    ((3, 12, 3), 'fork', 2, 'pass'),
])
def test_fork_deadlock_check(version, method, workers, status):
    ctx = SimpleNamespace(cfg=Config(dict(
        train_dataloader=dict(num_workers=workers),
        env_cfg=dict(mp_cfg=dict(mp_start_method=method)))))
    result = env_checks.check_fork_deadlock(ctx, version)
    assert result.status == status, result
    if status == 'warn':
        assert 'gh-112275' in result.detail and 'forkserver' in result.fix
