"""mmdet3d 0.x configs, read from the released source package.

The 0.x side of the legacy-config tests is mmdet3d 1.0.0rc6's source
package on the package registry (about 0.5 MB), which ships every 0.x config
under ``mmdet3d/.mim/configs/``. :func:`mmdet3d_0x_configs` downloads it with
pip once into ``data/.cache/upstream/`` (git-ignored with ``data/``) and
reuses it afterwards; no upstream file is copied into the repository. The
1.x side is the installed mmdet3d (:data:`MMDET3D_1X_CONFIGS`).

Without registry access and without the cache, the tests that need it fail
with a message saying so (they are not skipped: CI has registry access).
"""
import functools
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import mmdet3d
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_CACHE = REPO_ROOT / 'data' / '.cache' / 'upstream'
MMDET3D_0X_VERSION = '1.0.0rc6'
MMDET3D_1X_CONFIGS = Path(mmdet3d.__file__).parent / '.mim' / 'configs'
_CONFIGS_IN_SDIST = 'mmdet3d/.mim/configs'


@functools.lru_cache(maxsize=None)
def mmdet3d_0x_configs() -> Path:
    """The ``configs`` folder of mmdet3d 1.0.0rc6 (the last 0.x-style
    release), downloaded on first use.

    Returns:
        Path: ``data/.cache/upstream/mmdet3d-1.0.0rc6/configs``.
    """
    target = UPSTREAM_CACHE / f'mmdet3d-{MMDET3D_0X_VERSION}' / 'configs'
    if (target / '_base_').is_dir():
        return target
    UPSTREAM_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=UPSTREAM_CACHE) as tmp:
        cmd = [
            sys.executable, '-m', 'pip', 'download',
            f'mmdet3d=={MMDET3D_0X_VERSION}', '--no-deps', '--no-binary',
            ':all:', '--disable-pip-version-check', '-d', tmp
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=600)
        archives = list(Path(tmp).glob('mmdet3d-*.tar.gz'))
        if proc.returncode != 0 or not archives:
            pytest.fail(
                f'upstream_configs: could not download the mmdet3d '
                f'{MMDET3D_0X_VERSION} source package ({" ".join(cmd)} '
                f'exited {proc.returncode}); these tests read the 0.x '
                f'configs from it and need the package registry once (or '
                f'the cache {target}).\n{proc.stderr[-2000:]}',
                pytrace=False)
        unpacked = Path(tmp) / 'configs'
        prefix = f'mmdet3d-{MMDET3D_0X_VERSION}/{_CONFIGS_IN_SDIST}/'
        with tarfile.open(archives[0]) as archive:
            members = []
            for member in archive.getmembers():
                if member.name.startswith(prefix) and member.isfile():
                    member.name = member.name[len(prefix):]
                    members.append(member)
            archive.extractall(unpacked, members=members, filter='data')
        if not (unpacked / '_base_').is_dir():
            pytest.fail(
                f'upstream_configs: {archives[0].name} has no '
                f'{_CONFIGS_IN_SDIST}/_base_; the package layout changed.',
                pytrace=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            unpacked.rename(target)
        except OSError:
            # Another session unpacked it first; keep theirs.
            if not (target / '_base_').is_dir():
                shutil.rmtree(target, ignore_errors=True)
                unpacked.rename(target)
    return target
