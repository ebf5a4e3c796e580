"""fileio.atomic: files that are either complete or absent.

* ``atomic_write`` replaces the target in one rename, with the permissions
  a plain ``open`` would give, and leaves the old file and no temporary
  behind when the write fails;
* SIGTERM and SIGINT raised during a write are delivered after it; off the
  main thread the write still works, unprotected;
* ``is_temporary`` and ``remove_stale_temporaries`` find and delete what a
  killed writer leaves;
* the ``'atomic_local'`` file backend writes through ``atomic_write`` when
  mmengine's ``fileio.put``/``put_text`` are used.
"""
import os
import signal
import stat
import threading

import mmengine.fileio as fileio
import pytest

from projects.mmdet3d_plugin.fileio.atomic import (ATOMIC_BACKEND, TMP_MARK,
                                                   AtomicLocalBackend,
                                                   _deferred_signals,
                                                   atomic_write,
                                                   atomic_write_json,
                                                   is_temporary,
                                                   remove_stale_temporaries)

BACKEND_ARGS = dict(backend=ATOMIC_BACKEND)


@pytest.mark.parametrize('durable', [True, False])
def test_write_replaces_the_target(durable, tmp_path):
    target = tmp_path / 'iter_2.pth'
    target.write_bytes(b'old content, longer than the new one')
    atomic_write(b'new', target, durable=durable)
    assert target.read_bytes() == b'new'
    assert os.listdir(tmp_path) == ['iter_2.pth']


def test_text_is_encoded_and_folders_are_created(tmp_path):
    target = tmp_path / 'a' / 'b' / 'last_checkpoint'
    atomic_write('époque', str(target), encoding='utf-16')
    assert target.read_bytes() == 'époque'.encode('utf-16')


def test_json_report_is_indented_with_a_final_newline(tmp_path):
    target = tmp_path / 'work' / 'report.json'
    atomic_write_json([dict(check='env.python', status='pass')], target)
    assert target.read_text() == (
        '[\n  {\n    "check": "env.python",\n    "status": "pass"\n  }\n]\n')
    assert os.listdir(target.parent) == ['report.json']


def test_permissions_follow_the_umask(tmp_path):
    # mkstemp creates 0600; the target gets what open() would give.
    previous = os.umask(0o027)
    try:
        atomic_write(b'x', tmp_path / 'file.bin')
    finally:
        os.umask(previous)
    mode = stat.S_IMODE((tmp_path / 'file.bin').stat().st_mode)
    assert mode == 0o640


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_signals_wait_for_the_write(signum, tmp_path):
    """A signal raised inside the protected block is delivered after it."""
    seen = []
    previous = signal.signal(signum, lambda num, frame: seen.append(num))
    try:
        with _deferred_signals():
            os.kill(os.getpid(), signum)
            atomic_write(b'x' * 1024, tmp_path / 'file.bin')
            assert seen == []
        assert seen == [signum]
    finally:
        signal.signal(signum, previous)
    assert (tmp_path / 'file.bin').read_bytes() == b'x' * 1024
    assert os.listdir(tmp_path) == ['file.bin']


def test_handlers_are_restored_after_the_write(tmp_path):
    def handler(num, frame):
        pass

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        atomic_write(b'x', tmp_path / 'file.bin')
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_write_off_the_main_thread(tmp_path):
    # Signal handlers cannot be installed there; the write goes ahead.
    errors = []

    def write():
        try:
            atomic_write(b'from a thread', tmp_path / 'file.bin')
        except Exception as e:  # reported below
            errors.append(e)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    assert errors == []
    assert (tmp_path / 'file.bin').read_bytes() == b'from a thread'


def test_failed_write_keeps_old_file(tmp_path):
    target = tmp_path / 'last_checkpoint'
    atomic_write('iter_2.pth', target)
    with pytest.raises(TypeError):
        atomic_write(object(), target)  # not bytes: fails mid-way
    assert target.read_text() == 'iter_2.pth'
    assert os.listdir(tmp_path) == ['last_checkpoint']


def test_failed_rename_leaves_no_temporary(tmp_path):
    (tmp_path / 'taken').mkdir()
    with pytest.raises(OSError):
        atomic_write(b'x', tmp_path / 'taken')  # a folder cannot be replaced
    assert os.listdir(tmp_path) == ['taken']


@pytest.mark.parametrize('name, temporary', [
    (f'.iter_2.pth.{TMP_MARK}k3j_x9', True),
    (f'work_dir/.last_checkpoint.{TMP_MARK}abc', True),
    ('iter_2.pth', False),
    ('.iter_2.pth', False),
    (f'iter_2.pth.{TMP_MARK}abc', False),  # not hidden
    (f'.{TMP_MARK}abc', False),  # no target name
    (f'.iter_2.pth.{TMP_MARK}', False),  # no random part
    (f'.iter_2.pth.{TMP_MARK}abc.pth', False),
])
def test_is_temporary(name, temporary):
    assert is_temporary(name) is temporary


def test_remove_stale_temporaries(tmp_path):
    stale = [tmp_path / f'.iter_{i}.pth.{TMP_MARK}x{i}' for i in (1, 2)]
    kept = [tmp_path / 'iter_1.pth', tmp_path / '.hidden']
    for path in stale + kept:
        path.write_bytes(b'')
    (tmp_path / f'.sub.{TMP_MARK}dir').mkdir()  # a folder: left alone
    assert remove_stale_temporaries(tmp_path) == [str(p) for p in stale]
    assert sorted(os.listdir(tmp_path)) == [
        '.hidden', f'.sub.{TMP_MARK}dir', 'iter_1.pth']
    assert remove_stale_temporaries(tmp_path) == []
    assert remove_stale_temporaries(tmp_path / 'missing') == []


def test_backend_is_registered_for_backend_args(tmp_path):
    backend = fileio.get_file_backend(str(tmp_path), backend_args=BACKEND_ARGS)
    assert isinstance(backend, AtomicLocalBackend)


def test_backend_writes_bytes_and_text(tmp_path):
    fileio.put(b'weights', tmp_path / 'new' / 'iter_1.pth',
               backend_args=BACKEND_ARGS)
    fileio.put_text('iter_1.pth', tmp_path / 'last_checkpoint',
                    backend_args=BACKEND_ARGS)
    backend = AtomicLocalBackend()
    backend.put_text('é', tmp_path / 'latin', encoding='latin-1')
    assert fileio.get(tmp_path / 'new' / 'iter_1.pth',
                      backend_args=BACKEND_ARGS) == b'weights'
    assert (tmp_path / 'last_checkpoint').read_text() == 'iter_1.pth'
    assert (tmp_path / 'latin').read_bytes() == b'\xe9'


@pytest.mark.parametrize('method', ['put', 'put_text'])
def test_backend_failed_write_keeps_old_file(method, tmp_path):
    # mmengine's LocalBackend truncates the file before writing.
    target = tmp_path / 'last_checkpoint'
    target.write_text('iter_2.pth')
    with pytest.raises(TypeError):
        getattr(AtomicLocalBackend(), method)(object(), target)
    assert target.read_text() == 'iter_2.pth'
    assert os.listdir(tmp_path) == ['last_checkpoint']
