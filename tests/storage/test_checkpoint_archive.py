"""The streamed checkpoint archive of downloads through the master, and its safe
extraction."""

import io
import os
import tarfile

import pytest

from determined.errors import CheckpointError
from determined.storage._archive import extract_tar_stream, tar_stream


def test_round_trip_streams_in_chunks(tmp_path):
    src = tmp_path / "ckpt"
    (src / "code" / "sub").mkdir(parents=True)
    big = os.urandom(3 * 1024 * 1024)
    (src / "state_dict.pth").write_bytes(big)
    (src / "code" / "sub" / "m.py").write_text("x = 1\n")
    chunks = list(tar_stream(str(src)))
    assert len(chunks) > 2 and max(len(c) for c in chunks) <= 2 * 1024 * 1024
    assert extract_tar_stream(iter(chunks), str(tmp_path / "out")) == 2
    assert (tmp_path / "out" / "state_dict.pth").read_bytes() == big
    assert (tmp_path / "out" / "code" / "sub" / "m.py").read_text() == "x = 1\n"


def _tar(add):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        add(tar)
    return [buf.getvalue()]


def test_members_outside_the_destination_or_links_are_refused(tmp_path):
    def escape(tar):
        info = tarfile.TarInfo("../evil.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))

    with pytest.raises(CheckpointError, match="outside"):
        extract_tar_stream(_tar(escape), str(tmp_path / "a"))
    assert not (tmp_path / "evil.txt").exists()

    def link(tar):
        info = tarfile.TarInfo("passwd")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)

    with pytest.raises(CheckpointError, match="not a regular file"):
        extract_tar_stream(_tar(link), str(tmp_path / "b"))
    with pytest.raises(CheckpointError, match="damaged"):
        extract_tar_stream([b"not a tar archive" * 100], str(tmp_path / "c"))
