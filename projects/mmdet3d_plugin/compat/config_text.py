"""The config's text formatted once per content, not once per use.

mmengine's ``Config.pretty_text`` formats the whole config with yapf each
time it is read, and a run reads it often: the Runner's config log,
``dump_config``, ``RuntimeInfoHook``, the visualizer's ``add_config``, and
the meta of every checkpoint saved. Formatting a CenterPoint config takes
about a second of CPU (yapf searches line splits), so a training process
spent 4-5 s formatting the same text before its first iteration, and a
second more at each checkpoint.

:func:`format_config_text_once` replaces the ``FormatCode`` that mmengine's
config module calls by one that remembers its last results: a text already
formatted is returned as yapf returned it the first time, so every dump,
log and checkpoint holds exactly the text it held before. A config whose
contents changed is a new text, formatted anew.
"""
import functools

from mmengine.config import config as mmengine_config

NAME = 'config_text_once'

#: Distinct config texts remembered (a run formats a few: its config, and
#: the same config once its runtime keys are set).
CACHED_TEXTS = 16


def _remembered(format_code):
    """``format_code`` (yapf's ``FormatCode``), its results remembered for
    the calls mmengine makes: a text and a style ``dict``."""

    @functools.lru_cache(maxsize=CACHED_TEXTS)
    def formatted(text: str, style: tuple):
        return format_code(text, style_config=dict(style))

    @functools.wraps(format_code)
    def format_once(unformatted_source, *args, style_config=None, **kwargs):
        if args or kwargs or not isinstance(style_config, dict):
            return format_code(unformatted_source, *args,
                               style_config=style_config, **kwargs)
        return formatted(unformatted_source,
                         tuple(sorted(style_config.items())))

    format_once.remembers = format_code
    format_once.cache_info = formatted.cache_info
    return format_once


def format_config_text_once() -> bool:
    """Let mmengine's ``Config.pretty_text`` format each text once per
    process (a second call does nothing more).

    Returns:
        bool: True if this call replaced mmengine's ``FormatCode``.
    """
    current = mmengine_config.FormatCode
    if hasattr(current, 'remembers'):
        return False
    mmengine_config.FormatCode = _remembered(current)
    return True
