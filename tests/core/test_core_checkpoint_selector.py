"""``core.checkpoint.restore_path`` / ``download`` with a ``selector``: from an object
store (a real moto S3 server) only the selected files are fetched; on a shared file
system the checkpoint's own directory is yielded."""

import os

import pytest

from determined import core
from object_store_testing import s3_server

pytestmark = pytest.mark.timeout(300)

BIG = "weights/big.bin"
SMALL = "config/small.json"
BIG_SIZE = 6 * 1024 * 1024  # under boto3's 8 MiB multipart threshold: one GET per fetch


@pytest.fixture
def moto(tmp_path):
    with s3_server(str(tmp_path)) as section:
        yield section, tmp_path / "moto.log"


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(root) for n in names)


def _store_checkpoint(ctx, src):
    (src / "weights").mkdir(parents=True)
    (src / "config").mkdir()
    (src / BIG).write_bytes(os.urandom(BIG_SIZE))
    (src / SMALL).write_text('{"lr": 0.1}')
    return ctx.checkpoint.upload(src, {"steps_completed": 3})


def _object_gets(log_path, name):
    """The GET requests for objects whose key ends with ``name`` the server logged."""
    return [line for line in log_path.read_text(errors="replace").splitlines()
            if '"GET ' in line and name in line.split('"GET ', 1)[1].split(" ", 1)[0]]


def test_object_store_restore_path_fetches_only_selected_files(moto, tmp_path, monkeypatch):
    section, log = moto
    monkeypatch.setenv("DET_CORE_DIR", str(tmp_path / "core"))
    with core.init(checkpoint_storage=dict(section, prefix="sel")) as ctx:
        storage_id = _store_checkpoint(ctx, tmp_path / "src")
        with ctx.checkpoint.restore_path(storage_id, selector=lambda p: p == SMALL) as path:
            assert _files(path) == [SMALL]
            assert (path / SMALL).read_text() == '{"lr": 0.1}'
        assert not path.exists()  # a scratch directory, removed afterwards
        assert _object_gets(log, "big.bin") == []
        assert len(_object_gets(log, "small.json")) == 1

        dest = tmp_path / "downloaded"
        ctx.checkpoint.download(storage_id, dest, selector=lambda p: p.startswith("config/"))
        assert _files(dest) == [SMALL]
        assert _object_gets(log, "big.bin") == []

        with ctx.checkpoint.restore_path(storage_id) as path:  # no selector: everything
            assert _files(path) == sorted([BIG, SMALL, "metadata.json"])
            assert (path / BIG).stat().st_size == BIG_SIZE
        assert len(_object_gets(log, "big.bin")) == 1


def test_shared_fs_restore_path_yields_the_checkpoint_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_CORE_DIR", str(tmp_path / "core"))
    with core.init() as ctx:
        storage_id = _store_checkpoint(ctx, tmp_path / "src")
        stored = tmp_path / "core" / "checkpoints" / storage_id
        with ctx.checkpoint.restore_path(storage_id, selector=lambda p: p == SMALL) as path:
            assert path == stored
            assert _files(path) == sorted([BIG, SMALL, "metadata.json"])
        assert stored.is_dir()  # the stored checkpoint itself: nothing removed
        dest = tmp_path / "downloaded"
        ctx.checkpoint.download(storage_id, dest, selector=lambda p: p == SMALL)
        assert _files(dest) == [SMALL]
