"""dist.durations: ``positive_seconds`` accepts positive, finite real
numbers as float seconds and refuses anything else with a message that
names the owner, the argument, what was got and a valid setting."""
import math
import re
from fractions import Fraction

import numpy as np
import pytest

from projects.mmdet3d_plugin.dist.durations import positive_seconds


@pytest.mark.parametrize('value, seconds', [
    (1800, 1800.0),
    (0.25, 0.25),
    (Fraction(3, 2), 1.5),
    (np.float32(2.5), 2.5),
    (np.int64(7), 7.0),
])
def test_positive_real_numbers_become_float_seconds(value, seconds):
    result = positive_seconds('DistWatchdogHook', 'timeout', value,
                              'timeout=1800')
    assert result == seconds
    assert type(result) is float


@pytest.mark.parametrize('value, shown', [
    (0, '0 (int)'),
    (-1.5, '-1.5 (float)'),
    (math.nan, 'nan (float)'),
    (math.inf, 'inf (float)'),
    (True, 'True (bool)'),
    ('600', "'600' (str)"),
    (None, 'None (NoneType)'),
    (1 + 2j, '(1+2j) (complex)'),
])
def test_anything_else_is_refused_with_the_fix(value, shown):
    expected = ('StragglerHook: gather_timeout must be a positive, finite '
                f'number of seconds, got {shown}; e.g. gather_timeout=600')
    with pytest.raises(ValueError, match=f'^{re.escape(expected)}$'):
        positive_seconds('StragglerHook', 'gather_timeout', value,
                         'gather_timeout=600')
