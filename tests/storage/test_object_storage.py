"""The storage contract on real object stores: moto's S3 server and the GCS emulator,
plus shared_fs so every backend passes the same tests."""

import http.server
import os
import subprocess
import sys
import threading
import textwrap
import uuid as uuidlib

import pytest

from determined.common import scratch
from determined.errors import CheckpointError, StorageError
from determined.storage import build_storage, read_metadata, write_metadata
from object_store_testing import BUCKET, gcs_server, s3_server


@pytest.fixture(scope="module")
def s3_section(tmp_path_factory):
    with s3_server(str(tmp_path_factory.mktemp("moto"))) as section:
        yield section


@pytest.fixture(scope="module")
def gcs_env(tmp_path_factory):
    with gcs_server(str(tmp_path_factory.mktemp("gcs"))) as env:
        yield env


def _backend(kind, request, tmp_path, monkeypatch):
    """(checkpoint_storage section, environment) of a backend, under a fresh prefix."""
    prefix = f"t-{uuidlib.uuid4().hex[:8]}"
    if kind == "shared_fs":
        return {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}, {}
    if request.param == "s3":
        return dict(request.getfixturevalue("s3_section"), prefix=prefix), {}
    env = request.getfixturevalue("gcs_env")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return {"type": "gcs", "bucket": BUCKET, "prefix": prefix}, env


@pytest.fixture(params=["shared_fs", "s3", "gcs"])
def backend(request, tmp_path, monkeypatch):
    return _backend(request.param, request, tmp_path, monkeypatch)


@pytest.fixture(params=["s3", "gcs"])
def object_backend(request, tmp_path, monkeypatch):
    """An object store only (shared_fs's killed writer: test_storage.py::
    test_killed_writer_leaves_only_hidden_scratch)."""
    return _backend(request.param, request, tmp_path, monkeypatch)


def _write(path, files):
    for rel, data in files.items():
        full = os.path.join(path, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


FILES = {"state_dict.pth": os.urandom(300_000), "code/model_def.py": b"x = 1\n",
         "code/sub/deep.txt": b"deep"}


def test_round_trip_and_listing(backend):
    section, _ = backend
    s = build_storage(section)
    with s.store_path("u1") as path:
        _write(path, FILES)
        write_metadata(path, {"uuid": "u1"})
        assert "u1" not in s.list_checkpoints()  # nothing visible while being written
    assert s.list_checkpoints() == ["u1"]
    with s.restore_path("u1") as path:
        assert read_metadata(path) == {"uuid": "u1"}
        for rel, data in FILES.items():
            with open(os.path.join(path, rel), "rb") as f:
                assert f.read() == data
    with s.local_checkpoint(s.describe("u1")) as path:  # what trials get to restore from
        assert read_metadata(path)["uuid"] == "u1"
    with pytest.raises(CheckpointError, match="already exists"):
        with s.store_path("u1"):
            pass


def test_failed_write_leaves_no_checkpoint(backend):
    s = build_storage(backend[0])
    with pytest.raises(RuntimeError):
        with s.store_path("u2") as path:
            _write(path, FILES)
            raise RuntimeError("crash")
    assert s.list_checkpoints() == []
    with pytest.raises(CheckpointError, match="u2 not found"):
        with s.restore_path("u2"):
            pass


def test_delete_removes_every_object(backend):
    section, _ = backend
    s = build_storage(section)
    for u in ("a", "b"):
        with s.store_path(u) as path:
            _write(path, FILES)
            write_metadata(path, {"uuid": u})
    s.delete("a")
    s.delete("a")  # already gone: no error
    assert s.list_checkpoints() == ["b"]
    if section["type"] != "shared_fs":
        keys = s.store.list_keys(s._key() + "/")
        assert keys and all(k.startswith(f"{section['prefix']}/b/") for k in keys)
    else:
        assert sorted(os.listdir(section["host_path"])) == ["b"]


def test_sigkill_mid_upload_registers_nothing(object_backend, tmp_path):
    """A writer SIGKILLed after uploading some files: the checkpoint does not exist, and
    its local copy is a scratch directory named after it, which its starter removes."""
    section, env = object_backend
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = textwrap.dedent(f"""
        import os, signal
        from determined.storage import build_storage, write_metadata
        s = build_storage({section!r})
        s.threads = 1
        real, count = s.store.upload_file, [0]
        def upload(local, key):
            real(local, key)
            count[0] += 1
            if count[0] == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        s.store.upload_file = upload
        with s.store_path("u3") as path:
            for i in range(5):
                open(os.path.join(path, f"part{{i}}"), "wb").write(os.urandom(1000))
            write_metadata(path, {{"uuid": "u3"}})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code],
                            env=dict(os.environ, **env, TMPDIR=str(tmp)))
    assert proc.wait() == -9
    left = scratch.owned(proc.pid, root=str(tmp))
    # det-ckpt-<pid>.<start>.<pid namespace>-<random>
    assert [os.path.basename(p).split(".")[0].split("-") for p in left] == \
        [["det", "ckpt", str(proc.pid)]]
    assert scratch.remove_owned(proc.pid, root=str(tmp)) == 1
    # what is left: the (empty) folder of liveness locks, the killed writer's removed too
    assert os.listdir(tmp) == [scratch.LIVE_DIR] and os.listdir(tmp / scratch.LIVE_DIR) == []
    s = build_storage(section)
    assert len(s.store.list_keys(f"{section['prefix']}/u3/")) == 2  # it did upload some
    assert s.list_checkpoints() == []
    with pytest.raises(CheckpointError):
        with s.restore_path("u3"):
            pass


def test_directories_for_tensorboard_files(backend, tmp_path):
    s = build_storage(backend[0])
    src = tmp_path / "tb"
    _write(str(src), {"events.out.1": b"e1", "sub/events.out.2": b"e2"})
    s.upload_dir(str(src), "tensorboard/experiment/1/trial/2")
    _write(str(src), {"events.out.1": b"e1-grown"})
    s.upload_dir(str(src), "tensorboard/experiment/1/trial/2")
    out = tmp_path / "out"
    assert s.download_dir("tensorboard/experiment/1/trial/2", str(out)) == [
        "events.out.1", "sub/events.out.2"]
    assert (out / "events.out.1").read_bytes() == b"e1-grown"
    assert s.download_dir("tensorboard/experiment/9", str(tmp_path / "none")) == []
    assert s.list_checkpoints() == []  # directories are not checkpoints


def test_deleting_a_directory_leaves_its_neighbours(backend, tmp_path):
    """An experiment's TensorBoard directory goes, every file under it; experiment 10's
    (whose key starts the same), another owner's and checkpoints stay."""
    s = build_storage(backend[0])
    src = tmp_path / "tb"
    _write(str(src), {"events.out.1": b"e1", "sub/events.out.2": b"e2"})
    for path in ("tensorboard/o/experiment/1/trial/1", "tensorboard/o/experiment/1/trial/2",
                 "tensorboard/o/experiment/10/trial/3", "tensorboard/p/experiment/1/trial/1"):
        s.upload_dir(str(src), path)
    uuid = _trial_checkpoint(s, 1, 10)
    assert s.list_dir("tensorboard/o/experiment/1") == [
        "trial/1/events.out.1", "trial/1/sub/events.out.2",
        "trial/2/events.out.1", "trial/2/sub/events.out.2"]
    assert s.delete_dir("tensorboard/o/experiment/1") == 4
    assert s.list_dir("tensorboard/o/experiment/1") == []
    assert s.delete_dir("tensorboard/o/experiment/1") == 0  # nothing there: no error
    assert s.list_dir("tensorboard/o/experiment/10") == ["trial/3/events.out.1",
                                                         "trial/3/sub/events.out.2"]
    assert len(s.list_dir("tensorboard/p/experiment/1")) == 2
    assert s.list_checkpoints() == [uuid]
    assert s.describe_dir("tensorboard/o").endswith("tensorboard/o")
    for bad in ("", ".", "../x"):
        with pytest.raises(StorageError, match="Expected a (path|directory) inside"):
            s.delete_dir(bad)
    assert s.list_checkpoints() == [uuid]


def test_unreachable_store_is_a_storage_error():
    s = build_storage({"type": "s3", "bucket": "b", "endpoint_url": "http://127.0.0.1:9",
                       "access_key": "k", "secret_key": "s"})
    s.store.client.meta.config.retries = {"max_attempts": 1}
    with pytest.raises(StorageError, match="s3://b"):
        s.list_checkpoints()


def _trial_checkpoint(s, trial_id, batches, **extra):
    uuid = str(uuidlib.uuid4())
    with s.store_path(uuid) as path:
        _write(path, {"state_dict.pth": b"w"})
        write_metadata(path, {"uuid": uuid, "experiment_id": 1, "trial_id": trial_id,
                              "batch_number": batches, **extra})
    return uuid


def test_leftovers_of_another_masters_trial_with_the_same_ids_stay(backend):
    """Two masters (or local directories) sharing a store both have experiment 1,
    trial 1: a trial with an owner takes only checkpoints naming that owner."""
    section, _ = backend
    s = build_storage(section)
    mine = _trial_checkpoint(s, 1, 30, owner="cluster-a")
    theirs = _trial_checkpoint(s, 1, 30, owner="cluster-b")
    unowned = _trial_checkpoint(s, 1, 30)
    assert s.trial_checkpoints(1, 1, owner="cluster-a") == {mine: 30}
    assert s.remove_leftovers(1, 1, set(), None, 0, owner="cluster-a") == [s.describe(mine)]
    assert set(s.list_checkpoints()) == {theirs, unowned}


def test_leftovers_are_unrecorded_checkpoints_past_the_restored_one(backend):
    """Checkpoints written milliseconds apart: only what no record names and holds more
    batches than the restored checkpoint goes; file times play no part."""
    section, _ = backend
    s = build_storage(section)
    recorded_early, restored = _trial_checkpoint(s, 1, 10), _trial_checkpoint(s, 1, 20)
    unrecorded_early = _trial_checkpoint(s, 1, 15)  # fewer batches: kept
    unrecorded_late = _trial_checkpoint(s, 1, 30)  # killed before reporting it
    recorded_late = _trial_checkpoint(s, 1, 40)  # rolled back past, but recorded: kept
    other_trial = _trial_checkpoint(s, 2, 30)
    recorded = {recorded_early, restored, recorded_late}
    assert s.remove_leftovers(1, 1, None, restored, 20) == []  # host cannot tell: none
    removed = s.remove_leftovers(1, 1, recorded, restored, 20)
    assert removed == [s.describe(unrecorded_late)]
    assert set(s.list_checkpoints()) == recorded | {unrecorded_early, other_trial}
    for uuid in recorded:
        with s.restore_path(uuid) as path:
            assert read_metadata(path)["uuid"] == uuid


class _RefusingS3(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint whose bucket holds two objects of one checkpoint and whose batch
    delete refuses one of them, as S3 does (200, the key listed under ``Errors``) when
    a policy denies deleting that object."""

    KEYS = ("ck/a.bin", "ck/b.bin")

    def _answer(self, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # list_objects_v2
        contents = "".join(f"<Contents><Key>{k}</Key><Size>1</Size></Contents>"
                           for k in self.KEYS)
        self._answer('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                     f"<Name>b</Name><KeyCount>{len(self.KEYS)}</KeyCount>"
                     f"<IsTruncated>false</IsTruncated>{contents}</ListBucketResult>")

    def do_POST(self) -> None:  # delete_objects
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer('<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error>'
                     f"<Key>{self.KEYS[1]}</Key><Code>AccessDenied</Code>"
                     "<Message>Access Denied</Message></Error></DeleteResult>")

    def log_message(self, *args: object) -> None:
        pass


def test_s3_objects_a_batch_delete_refused_are_a_storage_error():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingS3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        s = build_storage({"type": "s3", "bucket": "b", "access_key": "k", "secret_key": "s",
                           "endpoint_url": f"http://127.0.0.1:{server.server_address[1]}"})
        with pytest.raises(StorageError, match=r"did not delete 1 of 2 .*'ck/b.bin': "
                                               r"AccessDenied \(Access Denied\)"):
            s.delete_dir("ck")
    finally:
        server.shutdown()
        server.server_close()
