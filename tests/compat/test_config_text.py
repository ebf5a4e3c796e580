"""``config_text_once``: mmengine's ``Config.pretty_text`` of a shipped
CenterPoint config formats with yapf once per text, and gives the text
yapf gives."""
import copy
from pathlib import Path

from mmengine.config import Config
from mmengine.config import config as mmengine_config

from projects.mmdet3d_plugin import load_config
from projects.mmdet3d_plugin.compat.config_text import (
    format_config_text_once)
from projects.mmdet3d_plugin.compat.fixes import apply_fixes

REPO = Path(__file__).resolve().parents[2]
PILLAR02 = (REPO / 'configs' / 'centerpoint' /
            'centerpoint_pillar02_second_secfpn_8xb4-cyclic-20e_nus-3d.py')


def test_each_text_is_formatted_once_as_yapf_formats_it():
    apply_fixes()
    format_code = mmengine_config.FormatCode
    assert hasattr(format_code, 'remembers'), 'config_text_once not applied'
    assert not format_config_text_once()  # applied once only
    cfg = load_config(str(PILLAR02))
    before = format_code.cache_info()
    text = cfg.pretty_text
    # A copy (the Runner deep-copies its config) reads the same text.
    assert copy.deepcopy(cfg).pretty_text == text == cfg.pretty_text
    after = format_code.cache_info()
    assert after.misses - before.misses <= 1
    assert after.hits - before.hits >= 2
    # What yapf itself makes of the text mmengine hands it.
    raw = Config(cfg.to_dict(), format_python_code=False).pretty_text
    assert format_code.remembers(raw, style_config=dict(
        based_on_style='pep8', blank_line_before_nested_class_or_def=True,
        split_before_expression_after_opening_paren=True))[0] == text
    # Another text is formatted anew.
    cfg.train_dataloader.batch_size = 1
    assert cfg.pretty_text != text
    assert format_code.cache_info().misses == after.misses + 1
