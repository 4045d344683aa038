"""Context archives: the safety check and extraction (real tar files, real directories)."""

import gzip
import io
import os
import tarfile

import pytest

from determined.common.api import (
    ContextArchiveError,
    check_context_archive,
    pack_context,
    unpack_context,
)


def _tar(*members, gz=True):
    """A tar.gz of ``(TarInfo, data-or-None)`` pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def _file(name, data=b"x = 1\n"):
    return tarfile.TarInfo(name), data


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def test_packed_directory_round_trips_with_an_inner_link(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "model_def.py").write_text("import pkg\n")
    (src / "pkg" / "__init__.py").write_text("")
    (src / "data.txt").write_text("hello")
    os.symlink("data.txt", src / "alias.txt")
    packed = pack_context(str(src))
    found = check_context_archive(packed)
    assert found.has_module("model_def") and found.has_module("pkg")
    assert set(found.names) >= {"model_def.py", "pkg", "pkg/__init__.py", "alias.txt"}
    dest = tmp_path / "dest"
    unpack_context(packed, str(dest))
    assert (dest / "alias.txt").read_text() == "hello"
    assert os.path.islink(dest / "alias.txt")


@pytest.mark.parametrize("members, what", [
    ([_file("../evil.py")], "'..'"),
    ([_file("a/../../evil.py")], "'..'"),
    ([_file("/etc/evil.py")], "absolute"),
    ([_link("passwd", "/etc/passwd")], "outside"),
    ([_link("up", "../outside")], "outside"),
    ([_link("deep", "a/../../x")], "outside"),
    ([_file("a/f.py"), _link("b", "a"), _link("c", "b/..")], "through another link"),
    ([_link("d", "."), _file("d/f.py")], "inside the link"),
    ([_link("h", "/etc/passwd", tarfile.LNKTYPE)], "hard link"),
    ([_link("h", "later.py", tarfile.LNKTYPE), _file("later.py")], "hard link"),
    ([(tarfile.TarInfo("dev"), None)], None),
    ([_file("same.py"), _file("same.py")], "twice"),
])
def test_unsafe_archives_are_rejected_naming_the_member(tmp_path, members, what):
    if what is None:  # a character device
        info = members[0][0]
        info.type = tarfile.CHRTYPE
        what = "devices"
    data = _tar(*members)
    with pytest.raises(ContextArchiveError) as e:
        check_context_archive(data)
    assert what in str(e.value)
    assert e.value.member is not None and e.value.member in str(e.value)
    dest = tmp_path / "dest"
    with pytest.raises(ContextArchiveError):
        unpack_context(data, str(dest))
    assert not dest.exists() or not any(dest.iterdir())
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "outside").exists()


def test_unpacked_size_is_bounded_before_reading_the_data():
    # A header declaring 2 GiB and no data at all: rejected from the header alone.
    header = tarfile.TarInfo("big.bin")
    header.size = 2 * 1024**3
    data = gzip.compress(header.tobuf(tarfile.GNU_FORMAT))
    with pytest.raises(ContextArchiveError, match="MiB unpacked .*big.bin.*detignore"):
        check_context_archive(data)
    small = _tar(_file("a.py", b"0" * 600), _file("b.py", b"0" * 600))
    assert check_context_archive(small, max_unpacked_bytes=1200).unpacked_bytes == 1200
    with pytest.raises(ContextArchiveError, match="b.py"):
        check_context_archive(small, max_unpacked_bytes=1000)


def test_member_count_is_bounded():
    data = _tar(*[_file(f"f{i}.py") for i in range(5)])
    with pytest.raises(ContextArchiveError, match="more than 4 entries"):
        check_context_archive(data, max_members=4)


def test_garbage_and_empty_archives_are_errors():
    with pytest.raises(ContextArchiveError, match="model_def is not a readable"):
        check_context_archive(b"\x1f\x8bnot really gzip")
    with pytest.raises(ContextArchiveError, match="empty"):
        check_context_archive(_tar())
    assert check_context_archive(_tar(_file("m.py"), gz=False)).names == ["m.py"]
