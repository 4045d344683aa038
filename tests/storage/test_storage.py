import os

import pytest

from determined.errors import CheckpointError, StorageError
from determined.storage import (
    CheckpointRecord,
    SharedFSStorageManager,
    build_storage,
    checkpoints_to_keep,
    read_metadata,
    write_metadata,
)


def test_store_publishes_atomically(tmp_path):
    s = SharedFSStorageManager(str(tmp_path), "ckpts")
    with s.store_path("u1") as path:
        with open(os.path.join(path, "weights"), "w") as f:
            f.write("x")
        write_metadata(path, {"uuid": "u1"})
        assert s.list_checkpoints() == []  # not visible while being written
    assert s.list_checkpoints() == ["u1"]
    with s.restore_path("u1") as path:
        assert read_metadata(path) == {"uuid": "u1"}
        assert path == os.path.join(str(tmp_path), "ckpts", "u1")


def test_crash_mid_write_leaves_no_checkpoint(tmp_path):
    s = SharedFSStorageManager(str(tmp_path))
    with pytest.raises(RuntimeError):
        with s.store_path("u2") as path:
            open(os.path.join(path, "half"), "w").close()
            raise RuntimeError("crash")
    assert s.list_checkpoints() == []
    assert not any(n.startswith(".partial") for n in os.listdir(tmp_path))
    with pytest.raises(CheckpointError, match="u2 not found"):
        with s.restore_path("u2"):
            pass


def test_killed_writer_leaves_only_hidden_scratch(tmp_path):
    """A writer killed with SIGKILL cannot clean up; its scratch dir stays hidden."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, signal
        from determined.storage import SharedFSStorageManager
        s = SharedFSStorageManager({str(tmp_path)!r})
        with s.store_path("u3") as path:
            open(os.path.join(path, "half"), "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == -9
    s = SharedFSStorageManager(str(tmp_path))
    assert s.list_checkpoints() == []
    assert any(n.startswith(".partial-u3") for n in os.listdir(tmp_path))


def test_bad_storage_config(tmp_path):
    with pytest.raises(StorageError, match="absolute"):
        SharedFSStorageManager("relative")
    with pytest.raises(StorageError, match="not available"):
        build_storage({"type": "hdfs", "hdfs_url": "h", "hdfs_path": "/p"})
    with pytest.raises(StorageError, match="shared_fs, s3 or gcs"):
        build_storage({"type": "ftp"})
    s = SharedFSStorageManager(str(tmp_path))
    with pytest.raises(CheckpointError):
        with s.store_path("../escape"):
            pass


def test_metadata_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no metadata.json"):
        read_metadata(str(tmp_path))
    (tmp_path / "metadata.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        read_metadata(str(tmp_path))


def _spec_example():
    m = {3: .6, 4: .5, 5: .4, 7: .2, 8: .3}
    return [CheckpointRecord(str(i), 1 if i <= 5 else 2, i, m.get(i)) for i in range(1, 11)]


@pytest.mark.parametrize("policy,kept", [
    ((0, 1, 1), {10, 7, 5}),
    ((2, 0, 0), {8, 7}),
    ((0, 0, 3), {10, 9, 8, 5, 4, 3}),
])
def test_gc_policy_spec_examples(policy, kept):
    keep = checkpoints_to_keep(_spec_example(), *policy)
    assert {int(u) for u in keep} == kept


def test_gc_larger_is_better_and_protected():
    keep = checkpoints_to_keep(_spec_example(), 1, 0, 0, smaller_is_better=False, protected={"1"})
    assert keep == {"3", "1"}
