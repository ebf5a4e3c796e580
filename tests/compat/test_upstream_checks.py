"""Every private upstream use of the inventory, checked against the installed
packages: the private names still there with the signatures recorded, the
upstream code the plugin re-implements unchanged (its source hash)."""
from dataclasses import replace
from typing import Optional

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from projects.mmdet3d_plugin.compat.inventory import (OVERRIDES, Override,
                                                      installed_version)
from projects.mmdet3d_plugin.compat.upstream_checks import (CHECKS, Check,
                                                            Copy, Private,
                                                            attribute_present,
                                                            plain_signature,
                                                            record, resolve,
                                                            source_sha256)

BY_NAME = {o.name: o for o in OVERRIDES}
INVENTORY = 'projects/mmdet3d_plugin/compat/upstream_checks.py'


def _id(check: Check) -> str:
    kind = 'copy' if isinstance(check, Copy) else 'private'
    return f'{check.override}:{kind}:{check.target}'


def _distribution(check: Check):
    dist, _, checked = check.checked.partition(' ')
    return dist, checked


def upstream_change(check: Check, override: Override) -> Optional[str]:
    """What changed upstream for ``check``, with what to do; None if
    nothing did."""
    dist, checked = _distribution(check)
    found = installed_version(dist)
    plugin = f'projects/mmdet3d_plugin/{override.where}'
    head = (f'{check.target} ({dist} {found}; recorded at {checked}) for '
            f'compat override {override.name!r}: ')
    try:
        obj = None if isinstance(check, Private) and \
            check.signature is None else resolve(check.target)
        if obj is None and not attribute_present(check.target):
            raise AttributeError(f'{check.target} is not set upstream')
    except (ImportError, AttributeError, FileNotFoundError) as err:
        return (head + f'gone ({type(err).__name__}: {err}). The plugin '
                f'uses it in {plugin} ({override.what}). Fix: find what '
                f'upstream uses instead, adapt {plugin}, then update the '
                f'entry in {INVENTORY}.')
    if isinstance(check, Copy):
        now = source_sha256(obj)
        expected = check.expected(found)
        if now in expected:
            return None
        recorded = ' or '.join(expected)
        return (head + f'its source changed (sha256 {now}, recorded '
                f'{recorded}). The plugin re-implements it in {plugin} '
                f'({override.what}). Fix: re-read the upstream source, '
                'update the copy in the plugin to match (its equality tests '
                f'compare with stock), then record the new hash and '
                f'{dist} {found} in {INVENTORY}.')
    if check.signature is None:
        return None
    now = plain_signature(obj)
    if now == check.signature:
        return None
    return (head + f'its signature is now {now}, recorded '
            f'{check.signature}. The plugin calls or overrides it in '
            f'{plugin} ({override.what}). Fix: re-read upstream, adapt the '
            f'plugin to the new signature, then record it and {dist} '
            f'{found} in {INVENTORY}.')


@pytest.mark.parametrize('check', CHECKS, ids=_id)
def test_upstream_is_as_recorded(check):
    """Fails when upstream changes, renames or removes what the plugin
    uses; the message names the plugin code to re-check and the fix."""
    dist, _ = _distribution(check)
    if installed_version(dist) is None:
        pytest.skip(f'{dist} is not installed')
    message = upstream_change(check, BY_NAME[check.override])
    assert message is None, message


@pytest.mark.parametrize('check', CHECKS, ids=_id)
def test_check_belongs_to_a_reviewed_override(check):
    """Each check names an inventory entry whose reviewed range holds the
    version the check was taken at."""
    assert check.override in BY_NAME, check
    dist, checked = _distribution(check)
    reviewed = BY_NAME[check.override].reviewed
    assert dist in reviewed, (check, reviewed)
    assert SpecifierSet(reviewed[dist]).contains(Version(checked)), (
        check, reviewed)
    if isinstance(check, Copy):
        for other, sha256 in ((checked, check.sha256),
                              *check.other_versions):
            assert SpecifierSet(reviewed[dist]).contains(Version(other)), (
                check, other, reviewed)
            assert len(sha256) == 64 and int(sha256, 16) >= 0


def test_a_copy_matches_the_hash_of_the_installed_version():
    """A version with a record of its own must match it; one between the
    recorded versions may match any of them."""
    store = _check('restart_store',
                   'torch.distributed.rendezvous._create_c10d_store')
    (old, old_sha256), = store.other_versions
    assert old == '2.1.2' and store.checked == 'torch 2.13.0'
    assert store.expected('2.1.2+cu121') == (old_sha256, )
    assert store.expected('2.13.0+cpu') == (store.sha256, )
    assert set(store.expected('2.5.1')) == {old_sha256, store.sha256}
    message = upstream_change(replace(store, other_versions=()),
                              BY_NAME['restart_store'])
    installed = installed_version('torch').split('+')[0]
    if installed == '2.1.2':  # the 2.13 record alone does not fit 2.1.2
        assert f'recorded {store.sha256}' in message
    elif installed == '2.13.0':
        assert message is None


def test_every_override_is_checked():
    """A new inventory entry comes with what to check of upstream."""
    checked = {c.override for c in CHECKS}
    assert [o.name for o in OVERRIDES if o.name not in checked] == []
    assert len(set(CHECKS)) == len(CHECKS), 'a check is listed twice'


def test_the_uses_named_in_issue_31_are_checked():
    targets = {(c.override, c.target) for c in CHECKS}
    for entry in [
        ('fast_load_points_from_file',
         'mmdet3d.datasets.transforms.LoadPointsFromFile._load_points'),
        ('fast_load_points_from_multi_sweeps',
         'mmdet3d.datasets.transforms.LoadPointsFromMultiSweeps'
         '._load_points'),
        ('seeded_class_sampler',
         'mmdet3d.datasets.transforms.dbsampler.BatchSampler._sample'),
        ('seeded_class_sampler',
         'mmdet3d.datasets.transforms.dbsampler.BatchSampler._example_num'),
        ('dataset_fully_initialized',
         'mmengine.dataset.BaseDataset._fully_initialized'),
        ('resumable_loops', 'mmengine.runner.EpochBasedTrainLoop.run_epoch'),
    ]:
        assert entry in targets, entry


def _check(override: str, target: str) -> Check:
    return next(c for c in CHECKS
                if c.override == override and c.target == target)


def test_changed_source_is_reported_with_the_fix():
    run_epoch = _check('resumable_loops',
                       'mmengine.runner.EpochBasedTrainLoop.run_epoch')
    message = upstream_change(replace(run_epoch, sha256='0' * 64),
                              BY_NAME['resumable_loops'])
    assert message.startswith(
        'mmengine.runner.EpochBasedTrainLoop.run_epoch (mmengine ')
    assert "compat override 'resumable_loops'" in message
    assert f'sha256 {run_epoch.sha256}, recorded {"0" * 64}' in message
    assert ('re-implements it in projects/mmdet3d_plugin/engine/resume/'
            'loops.py: ResumableEpochBasedTrainLoop') in message
    assert 're-read the upstream source, update the copy' in message
    assert 'record the new hash and mmengine' in message
    assert INVENTORY in message


def test_changed_signature_and_missing_names_are_reported():
    load = _check('fast_load_points_from_file',
                  'mmdet3d.datasets.transforms.LoadPointsFromFile'
                  '._load_points')
    assert load.signature == '(self, pts_filename)'
    override = BY_NAME['fast_load_points_from_file']
    message = upstream_change(replace(load, signature='(self)'), override)
    assert 'its signature is now (self, pts_filename), recorded (self)' in \
        message
    assert 'load_points_from_file.py: FastLoadPointsFromFile' in message
    gone = upstream_change(
        replace(load, target=load.target + '_renamed'), override)
    assert 'gone (AttributeError' in gone and 'adapt' in gone
    attribute = _check('seeded_class_sampler',
                       'mmdet3d.datasets.transforms.dbsampler.BatchSampler'
                       '._example_num')
    missing = upstream_change(
        replace(attribute, target=attribute.target + 's'),
        BY_NAME['seeded_class_sampler'])
    assert 'is not set upstream' in missing


def test_attributes_are_found_where_upstream_sets_them():
    # Assigned in __init__, a class attribute, a module name, an instance's.
    assert attribute_present('mmengine.dataset.BaseDataset._fully_initialized')
    assert attribute_present(
        'mmengine.logging.HistoryBuffer._statistics_methods')
    assert attribute_present('torch.nn.modules.batchnorm._BatchNorm')
    assert attribute_present(
        'multiprocessing.forkserver._forkserver._preload_modules')
    assert not attribute_present('mmengine.dataset.BaseDataset._no_such')


def test_a_wheel_file_resolves_and_signatures_drop_annotations():
    update = resolve('mmdet3d/.mim/tools/dataset_converters/'
                     'update_infos_to_v2.py:update_pkl_infos')
    assert plain_signature(update) == '(dataset, out_dir, pkl_path)'
    with pytest.raises(FileNotFoundError):
        resolve('mmdet3d/.mim/tools/dataset_converters/none.py:f')
    with pytest.raises(ModuleNotFoundError):
        resolve('no_such_package_here.f')


def test_record_prints_what_to_write_into_the_table():
    run_epoch = _check('resumable_loops',
                       'mmengine.runner.EpochBasedTrainLoop.run_epoch')
    assert record(run_epoch.target) == dict(signature='(self)',
                                            sha256=run_epoch.sha256)
    assert record('mmengine.logging.HistoryBuffer._statistics_methods') == {}
