"""The inventory of upstream overrides: reviewed versions, switches and the
known upstream errors the tools name."""
import re
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.version import Version

from projects.mmdet3d_plugin import compat
from projects.mmdet3d_plugin.compat.inventory import (OFF_VARIABLE, OVERRIDES,
                                                      outside_reviewed_range,
                                                      switched_off)
from projects.mmdet3d_plugin.compat.inventory import installed_version
from projects.mmdet3d_plugin.cli.run_tool import user_error_message

PACKAGE = Path(compat.__file__).resolve().parents[1]


def test_installed_versions_were_reviewed():
    """Fails when an upgrade moves a package out of a reviewed range; the
    message names the override, where it lives and what to re-check."""
    messages = outside_reviewed_range()
    assert not messages, '\n'.join(messages)


@pytest.mark.parametrize('override', OVERRIDES, ids=lambda o: o.name)
def test_override_points_at_plugin_code(override):
    path, _, names = override.where.partition(': ')
    assert (PACKAGE / path).is_file(), override.where
    source = (PACKAGE / path).read_text()
    for name in names.split(', '):
        assert name in source, (override.where, name)
    assert override.reviewed and override.upstream and override.remove_when


def test_range_narrowed_below_installed_is_reported():
    dbsampler = next(o for o in OVERRIDES if o.name == 'dbsampler_np_long')
    below = Version(installed_version('mmdet3d')).public
    narrowed = replace(dbsampler, reviewed={'mmdet3d': f'<{below}'})
    (message, ) = outside_reviewed_range([narrowed])
    assert message.startswith(f'mmdet3d {installed_version("mmdet3d")} is '
                              f"outside the range '<{below}'")
    assert "'dbsampler_np_long'" in message
    assert 're-check compat/dbsampler.py: DataBaseSampler' in message
    assert 'mmdet3d #2821' in message


def test_switch_names_are_checked(monkeypatch):
    monkeypatch.setenv(OFF_VARIABLE, 'dbsampler_np_long, ')
    assert switched_off() == {'dbsampler_np_long'}
    monkeypatch.setenv(OFF_VARIABLE, 'dbsampler')
    with pytest.raises(ValueError, match=r"unknown fix\(es\) \['dbsampler'\]"
                       r'.*dbsampler_np_long'):
        switched_off()


def test_fix_is_registered_where_objectsample_builds_its_sampler():
    from mmdet3d.registry import TRANSFORMS

    from projects.mmdet3d_plugin.compat import dbsampler, fixes

    # The lookup registers the plugin (by location) and applies the fixes.
    assert TRANSFORMS.get('DataBaseSampler') is dbsampler.DataBaseSampler
    assert 'dbsampler_np_long' in fixes.applied


def test_known_upstream_error_from_a_worker_is_named():
    worker_error = AttributeError(
        'Caught AttributeError in DataLoader worker process 0.\n'
        'Original Traceback (most recent call last):\n'
        '  File "dbsampler.py", line 283, in sample_all\n'
        "AttributeError: module 'numpy' has no attribute 'long'\n")
    message = user_error_message(worker_error)
    assert message.startswith(
        "AttributeError: module 'numpy' has no attribute 'long': mmdet3d "
        "1.4.0's DataBaseSampler")
    assert 'mmdet3d #2821' in message and 'PR #2872' in message
    assert message.endswith(f'out of {OFF_VARIABLE}.')


def test_docs_list_the_fixes_applied_at_import():
    """docs/compat.md's list of the fixes applied when the plugin registers
    is the inventory's."""
    page = (PACKAGE.parents[1] / 'docs' / 'compat.md').read_text()
    section = page.split('When the plugin registers its classes')[1].split(
        '\n## ')[0]
    listed = set(re.findall(r'^- `(\w+)`:', section, flags=re.M))
    assert listed == {o.name for o in OVERRIDES if o.at_import}
    switchable = {o.name for o in OVERRIDES if o.switchable}
    assert f'{OFF_VARIABLE}={",".join(sorted(switchable))}' in section
