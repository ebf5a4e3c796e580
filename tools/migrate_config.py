"""Write a plain mmengine config from one with presets and/or 0.x keys.

Usage::

    python tools/migrate_config.py OLD.py NEW.py [--no-plugin]
        [--cfg-options KEY=VALUE ...] [--debug]

NEW.py has the presets merged, mmdet3d 0.x keys translated (the model
included: voxel layer to the data preprocessor, ``mmdet.`` scopes, renamed
classes) and no ``presets`` key, so mmdet3d's own ``tools/train.py`` runs
it. A 0.x model whose types no 1.x registry knows (a 0.x plugin's classes)
is refused with their key paths. By default it
keeps this plugin's runner (LR scaling that counts accumulation) and imports
the plugin through ``custom_imports``; ``--no-plugin`` writes a config for
stock mmdet3d without the plugin installed. A bad config prints one
``error:`` line and exits 1 (``--debug`` shows the traceback).
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from projects.mmdet3d_plugin.cli.run_tool import run_tool  # noqa: E402
from projects.mmdet3d_plugin.cli.parsers import (add_cfg_options,  # noqa: E402
                                                 add_debug_flag,
                                                 check_config_file)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Write a plain mmengine config: presets merged, mmdet3d '
        '0.x keys translated')
    parser.add_argument('config', help='config to migrate')
    parser.add_argument('out', help='path of the .py config to write')
    parser.add_argument(
        '--no-plugin',
        action='store_true',
        help='write a config that runs without this plugin installed (stock '
        'Runner: auto_scale_lr then ignores accumulation)')
    add_cfg_options(
        parser, help='overrides merged before writing, as for tools/train.py')
    add_debug_flag(parser)
    return parser.parse_args(argv)


def migrate(args) -> int:
    check_config_file(args)
    # The config code (and, for a 0.x model, mmdet3d's registries) loads
    # after the arguments are checked.
    from projects.mmdet3d_plugin.config.loading import migrate_config
    migrate_config(
        args.config,
        args.out,
        cfg_options=args.cfg_options,
        plugin=not args.no_plugin)
    return 0


def main(argv=None) -> int:
    return run_tool(migrate, parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
