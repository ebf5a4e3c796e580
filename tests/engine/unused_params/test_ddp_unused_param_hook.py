"""DDPUnusedParamHook: per-rank unused parameters, report, crash, preflight.

The distributed cases run real 2-rank gloo DDP through the mmengine Runner
in ranks forked from the test process (``train_tool.fork_call`` running
``tests/helpers/ddp_runner.py``'s ``run_ranks``: the hook is the subject,
not a launcher); the ranks start once and train one scenario after the
other. The single-process cases and the preflight run in process.
"""
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from mmengine.config import Config, ConfigDict
from mmengine.optim import AmpOptimWrapper
from mmengine.registry import DefaultScope
from mmengine.runner import Runner

import projects.mmdet3d_plugin  # noqa: F401  registers the hook
from tests.helpers import toy_models
from mmdet3d.registry import MODELS
from projects.mmdet3d_plugin.engine.unused_params.ddp_unused_param_hook \
    import DDPUnusedParamHook
from projects.mmdet3d_plugin.cli.find_unused import find_unused_parameters
from tests.helpers.ddp_runner import run_ranks
from tests.helpers.torch_features import requires_cpu_grad_scaler
from tests.helpers.train_tool import fork_call
from projects.mmdet3d_plugin.engine.unused_params.summary import (
    UnusedParamSummary)
from projects.mmdet3d_plugin.failures.unused_report import (
    parse_unused_indices)
from projects.mmdet3d_plugin.engine.unused_params.advice import wrapper_config_line

REPO = Path(__file__).resolve().parents[3]
DEAD = ['dead.weight', 'dead.bias']
BRANCH_A = ['branch_a.weight', 'branch_a.bias']
BRANCH_B = ['branch_b.weight', 'branch_b.bias']
WRAPPER_ON = ("model_wrapper_cfg = dict(type='CPUDistributedDataParallel', "
              'find_unused_parameters=True)')
WRAPPER_OFF = WRAPPER_ON.replace('=True', '=False')
SCENARIOS = [
    dict(name='find_unused_true', kwargs=dict(find_unused=True)),
    dict(
        name='accumulation',
        kwargs=dict(
            find_unused=True,
            accumulative_counts=2,
            hook=dict(type='DDPUnusedParamHook', check_iters=1))),
    dict(
        name='nothing_unused',
        kwargs=dict(
            find_unused=True,
            model=dict(
                type='ToyBranchModel', rank_branches=['ab', 'ab'],
                with_dead=False))),
    dict(
        name='centerpoint',
        kwargs=dict(
            centerpoint=True,
            find_unused=True,
            max_iters=2,
            hook=dict(type='DDPUnusedParamHook', check_iters=2))),
    # Expected to fail; the processes stay usable (no rank reduced).
    dict(name='find_unused_false', kwargs=dict(find_unused=False)),
    # Rank 1 uses everything, so it waits inside DDP for rank 0's gradients
    # and never gets to the gather: last, as it leaves the group broken.
    dict(
        name='rank0_skips',
        kwargs=dict(
            find_unused=False,
            model=dict(
                type='ToyBranchModel', rank_branches=['a', 'ab'],
                with_dead=False),
            hook=dict(type='DDPUnusedParamHook', gather_timeout=3))),
]


@pytest.fixture(scope='module')
def ddp_runs(tmp_path_factory):
    """Run SCENARIOS on 2 gloo ranks; name -> (rank results, report, log)."""
    out = tmp_path_factory.mktemp('ddp')
    group = fork_call(run_ranks, out, SCENARIOS)  # hook: under 2-rank DDP
    try:
        output = group.communicate(timeout=240)[0]
    except subprocess.TimeoutExpired:
        output = group.communicate()[0] + '\n(killed after 240 s)'
    runs = {}
    for scenario in SCENARIOS:
        folder = out / scenario['name']
        ranks = []
        for rank in range(2):
            path = folder / f'rank{rank}.json'
            assert path.exists(), (
                f'{scenario["name"]}: rank {rank} left no result; output of '
                f'ranks 0 and 1:\n{output[-6000:]}')
            ranks.append(json.loads(path.read_text()))
        log_dir = Path(ranks[0]['log_dir'])
        report_file = log_dir / 'unused_params.json'
        report = json.loads(report_file.read_text()) \
            if report_file.exists() else None
        logs = sorted(log_dir.glob('*.log'))
        runs[scenario['name']] = (ranks, report,
                                  logs[0].read_text() if logs else '')
    return runs


def _assert_toy_classified(report):
    assert report['world_size'] == 2
    assert report['ranks_reported'] == [0, 1]
    assert sorted(report['unused_on_all_ranks']) == sorted(DEAD)
    expected = {**{n: [1] for n in BRANCH_A}, **{n: [0] for n in BRANCH_B}}
    assert report['unused_on_some_ranks'] == expected
    assert 'frozen.weight' not in json.dumps(report)


@pytest.mark.slow
def test_ddp_find_unused_true_trains_and_classifies(ddp_runs):
    ranks, report, _ = ddp_runs['find_unused_true']
    assert all(r['ok'] for r in ranks), ranks
    _assert_toy_classified(report)
    assert report['iterations_checked'] == [0, 1, 2]
    assert report['ddp'] is True
    assert report['find_unused_parameters'] is True
    assert report['config_line'] == WRAPPER_ON
    assert f'keep `{WRAPPER_ON}`' in report['recommendation']
    assert 'dead weight' in report['recommendation']


@pytest.mark.slow
def test_ddp_accumulation_checks_through_the_synchronised_iteration(
        ddp_runs):
    ranks, report, _ = ddp_runs['accumulation']
    assert all(r['ok'] for r in ranks), ranks
    # check_iters=1, but iteration 0 runs under no_sync: the window grows
    # to the first iteration that synchronises gradients.
    assert report['iterations_checked'] == [0, 1]
    _assert_toy_classified(report)


@pytest.mark.slow
def test_ddp_find_unused_true_without_unused_suggests_turning_it_off(
        ddp_runs):
    ranks, report, _ = ddp_runs['nothing_unused']
    assert all(r['ok'] for r in ranks), ranks
    assert report['unused_on_all_ranks'] == []
    assert report['unused_on_some_ranks'] == {}
    assert report['config_line'] == WRAPPER_OFF
    assert WRAPPER_OFF in report['recommendation']
    assert 'static_graph' in report['recommendation']


@pytest.mark.slow
def test_ddp_centerpoint_task_head_left_out_of_loss(ddp_runs):
    # Task 1's losses are returned (logged) but not summed. DDP with
    # find_unused_parameters=True sends zero gradients into its head, so
    # only the loss graph tells that it is unused.
    ranks, report, _ = ddp_runs['centerpoint']
    assert all(r['ok'] for r in ranks), ranks
    with DefaultScope.overwrite_default_scope('mmdet3d'):
        model = MODELS.build(ConfigDict(toy_models.tiny_centerpoint()))
    task1 = [
        n for n, p in model.named_parameters()
        if n.startswith('pts_bbox_head.task_heads.1.') and p.requires_grad
    ]
    assert task1 and sorted(report['unused_on_all_ranks']) == sorted(task1)
    assert report['unused_on_some_ranks'] == {}
    assert report['config_line'] == WRAPPER_OFF
    assert 'Freeze them' in report['recommendation']


@pytest.mark.slow
def test_ddp_find_unused_false_fails_with_names(ddp_runs):
    ranks, report, log = ddp_runs['find_unused_false']
    assert not any(r['ok'] for r in ranks)
    for rank, other in ((0, 1), (1, 0)):
        error = ranks[rank]['error']
        assert error.startswith('RuntimeError: DDPUnusedParamHook: DDP '
                                'stopped'), error
        skipped = BRANCH_B if rank == 0 else BRANCH_A
        line = next(x for x in error.splitlines()
                    if x.strip().startswith(f'rank {rank}:'))
        assert set(line.split(':', 1)[1].replace(',', ' ').split()) == \
            set(skipped + DEAD)
        assert WRAPPER_ON in error
        assert 'Expected to have finished reduction' in ranks[rank]['cause']
    # Written after iteration 0, before DDP failed in iteration 1.
    assert report['iterations_checked'] == [0]
    assert report['find_unused_parameters'] is False
    _assert_toy_classified(report)
    assert report['config_line'] == WRAPPER_ON
    assert WRAPPER_ON in report['recommendation']
    assert '5-10%' in report['recommendation']
    table_at = log.index('dead.weight, dead.bias')
    assert table_at < log.index('DDPUnusedParamHook: DDP stopped')


@pytest.mark.slow
def test_ddp_rank_waiting_in_backward_does_not_hide_names(ddp_runs):
    ranks, report, _ = ddp_runs['rank0_skips']
    assert not any(r['ok'] for r in ranks)
    error = ranks[0]['error']
    assert 'rank 0: branch_b.weight, branch_b.bias' in error, error
    # Rank 1 never reached the gather: rank 0 reported alone.
    assert report['ranks_reported'] == [0]
    assert report['complete'] is False
    assert report['unused_on_some_ranks'] == {n: [0] for n in BRANCH_B}


# -- single process --------------------------------------------------------


def _train(tmp_path, **kwargs):
    cfg = toy_models.runner_cfg(str(tmp_path), **kwargs)
    runner = Runner.from_cfg(Config(cfg))
    runner.train()
    hook = next(h for h in runner.hooks if isinstance(h, DDPUnusedParamHook))
    report = json.loads(
        (Path(runner.log_dir) / 'unused_params.json').read_text())
    return runner, hook, report


def test_single_process_report(tmp_path):
    runner, hook, report = _train(tmp_path)
    assert report == hook.report
    assert report['world_size'] == 1
    assert report['ddp'] is False
    assert report['find_unused_parameters'] is False
    assert report['iterations_checked'] == [0, 1, 2]
    # One batch holds an 'a' and a 'b' sample: only the dead layer is unused.
    assert report['unused_on_all_ranks'] == DEAD
    assert report['unused_on_some_ranks'] == {}
    assert report['num_parameters_checked'] == len(toy_models.TOY_PARAMS)
    assert report['config_line'] == 'find_unused_parameters = True'
    assert 'find_unused_parameters = True' in report['recommendation']
    assert 'freeze' in report['recommendation']
    # The window is over: no gradient hook is left on any parameter, and
    # the train loop has its own run_iter back.
    for param in runner.model.parameters():
        assert not getattr(param, '_post_accumulate_grad_hooks', None)
    assert 'run_iter' not in vars(runner.train_loop)


@pytest.mark.parametrize(
    'amp', [False, pytest.param(True, marks=requires_cpu_grad_scaler)])
def test_accumulation_and_amp(tmp_path, amp):
    # batch_size=1: iteration 0 runs branch 'a', iteration 1 branch 'b'.
    # Parameters are zero-grad'ed only every second iteration and, with
    # AMP, see scaled bf16-autocast gradients: marks must not depend on it.
    runner, _, report = _train(
        tmp_path,
        batch_size=1,
        accumulative_counts=2,
        amp=amp,
        hook=dict(type='DDPUnusedParamHook', check_iters=1))
    if amp:
        assert isinstance(runner.optim_wrapper, AmpOptimWrapper)
        assert runner.optim_wrapper.loss_scaler.get_scale() > 1
    assert report['iterations_checked'] == [0, 1]
    assert report['unused_on_all_ranks'] == DEAD
    assert report['unused_on_some_ranks'] == {
        n: [0]
        for n in BRANCH_A + BRANCH_B
    }


@pytest.mark.parametrize('check_iters,interval,expected', [
    (2, 0, [0, 1]),
    (2, 3, [0, 1, 2, 5]),
    (0, 4, [3]),
])
def test_check_window(tmp_path, check_iters, interval, expected):
    _, _, report = _train(
        tmp_path,
        max_iters=6,
        hook=dict(
            type='DDPUnusedParamHook',
            check_iters=check_iters,
            interval=interval))
    assert report['iterations_checked'] == expected


def test_frozen_dead_layer_leaves_nothing_to_report(tmp_path):
    cfg = toy_models.runner_cfg(str(tmp_path))
    runner = Runner.from_cfg(Config(cfg))
    runner.model.dead.requires_grad_(False)
    runner.train()
    report = json.loads(
        (Path(runner.log_dir) / 'unused_params.json').read_text())
    assert report['unused_on_all_ranks'] == []
    assert report['num_parameters_checked'] == len(toy_models.TOY_PARAMS) - 2
    assert report['config_line'] is None


@pytest.mark.parametrize('kwargs,match', [
    (dict(check_iters=-1), r'check_iters must be an int >= 0, got -1'),
    (dict(check_iters=2.5), r'check_iters must be an int >= 0'),
    (dict(check_iters=True), r'check_iters must be an int >= 0'),
    (dict(interval=-5), r'interval must be an int >= 0, got -5'),
    (dict(check_iters=0, interval=0), r'would never check anything'),
    (dict(out_file=''), r'out_file must be a non-empty file name'),
    (dict(group_depth=0), r'group_depth must be an int >= 1'),
    (dict(max_names=0), r'max_names must be an int >= 1'),
    (dict(gather_timeout=0),
     r'^DDPUnusedParamHook: gather_timeout must be a positive, finite '
     r'number of seconds, got 0 \(int\); e\.g\. gather_timeout=60'),
])
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DDPUnusedParamHook(**kwargs)


@pytest.mark.parametrize('cfg,value,line', [
    (None, True, 'find_unused_parameters = True'),
    (Config(dict(find_unused_parameters=True)), False,
     'find_unused_parameters = False'),
    (Config(
        dict(
            model_wrapper_cfg=dict(
                broadcast_buffers=False, type='MMDistributedDataParallel'))),
     True, "model_wrapper_cfg = dict(type='MMDistributedDataParallel', "
     'broadcast_buffers=False, find_unused_parameters=True)'),
])
def test_config_line_follows_how_the_config_wraps(cfg, value, line):
    assert wrapper_config_line(cfg, value) == line


def test_parse_ddp_error_indices():
    message = ('Expected to have finished reduction in the prior iteration '
               '...\nParameter indices which did not receive grad for rank '
               '1: 0 1 6 7\n In addition, you can set ...')
    assert parse_unused_indices(message) == {1: [0, 1, 6, 7]}
    assert parse_unused_indices('something else') == {}


def test_summary_needs_every_rank_before_calling_anything_dead():
    summary = UnusedParamSummary(['a', 'b'], [(1, ), (2, )], world_size=2)
    summary.add_check(0, {0: [0, 1]})
    assert summary.unused_on_all_ranks == []
    assert summary.unused_on_some_ranks == {'a': [0], 'b': [0]}
    summary.add_check(1, {0: [0], 1: [0, 1]})
    assert summary.unused_on_all_ranks == ['a']
    assert summary.unused_on_some_ranks == {'b': [0, 1]}


# -- preflight -------------------------------------------------------------


def _load_tool():
    spec = importlib.util.spec_from_file_location(
        'find_unused_params_tool', REPO / 'tools' / 'find_unused_params.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize('frozen,code', [(False, 1), (True, 0)])
def test_preflight_tool_exit_code(tmp_path, capsys, frozen, code):
    cfg = toy_models.runner_cfg(str(tmp_path / 'user_work_dir'))
    if frozen:
        cfg['model'] = dict(type='ToyBranchModel', with_dead=False)
    config = tmp_path / 'toy_config.py'
    Config(cfg).dump(str(config))
    tool = _load_tool()
    assert tool.main([str(config), '--iters', '2']) == code
    printed = capsys.readouterr().out
    if frozen:
        assert 'No parameter went unused in 2 checked iterations' in printed
    else:
        assert 'dead.weight, dead.bias' in printed
        assert '`find_unused_parameters = True`' in printed
    # Nothing was written into the config's work_dir.
    assert not (tmp_path / 'user_work_dir').exists()


@pytest.mark.slow
def test_preflight_centerpoint_synthetic_config(nus_synthetic):
    """The lead's CenterPoint config, one of its six task heads unsummed."""
    cfg = Config.fromfile(
        str(REPO / 'configs/centerpoint/centerpoint_pillar_synthetic.py'))
    cfg.model.pts_bbox_head.type = 'CenterHeadSkippingTasks'
    cfg.model.pts_bbox_head.skip_tasks = [5]
    loader = cfg.train_dataloader
    loader.dataset.data_root = str(nus_synthetic) + '/'
    loader.update(batch_size=1, num_workers=0, persistent_workers=False)
    report = find_unused_parameters(cfg, iters=1)
    assert report['iterations_checked'] == [0]
    dead = report['unused_on_all_ranks']
    assert dead and all(
        n.startswith('pts_bbox_head.task_heads.5.') for n in dead), dead
    assert report['unused_on_some_ranks'] == {}
    assert 'pts_bbox_head.task_heads.5' in report['table']
    assert report['config_line'] == 'find_unused_parameters = True'
