"""Checking and extracting uploaded context archives (the model definition's tar.gz).

An archive comes from a client, so it is untrusted until :func:`check_context_archive`
accepted it. The check reads the tar headers as a stream and stops at the first
problem, so a gzip bomb costs at most the size limit in decompression. It rejects:

- member paths that are absolute or contain ``..``;
- symbolic links whose target is absolute, leaves the archive's root or passes
  through another link; hard links to anything but an earlier regular file;
- devices, FIFOs and other special files; members inside a link;
- more than :data:`MAX_CONTEXT_MEMBERS` members, or more than
  :data:`MAX_UNPACKED_CONTEXT_BYTES` bytes of file contents once unpacked.

:func:`extract_context` runs the same check and then extracts with tarfile's
``data`` filter as a second line of defence.
"""

from __future__ import annotations

import io
import os
import tarfile
from typing import Dict, List, Optional, Set

from determined.errors import InvalidModelDefError

__all__ = [
    "ContextArchive",
    "ContextArchiveError",
    "MAX_CONTEXT_MEMBERS",
    "MAX_UNPACKED_CONTEXT_BYTES",
    "check_context_archive",
    "extract_context",
]

#: Total size of the files of an unpacked context directory.
MAX_UNPACKED_CONTEXT_BYTES = 1024 * 1024 * 1024
#: Files, directories and links in one context archive.
MAX_CONTEXT_MEMBERS = 100_000


class ContextArchiveError(InvalidModelDefError):
    """An uploaded context archive is unreadable or unsafe; ``member`` names the entry."""

    def __init__(self, message: str, member: Optional[str] = None):
        super().__init__(message)
        self.member = member


class ContextArchive:
    """What :func:`check_context_archive` found: member names and unpacked size."""

    def __init__(self, names: List[str], unpacked_bytes: int):
        self.names = names
        self.unpacked_bytes = unpacked_bytes

    def has_module(self, module: str) -> bool:
        """Whether ``module`` (``pkg`` or ``mod``) is at the archive's top level."""
        return f"{module}.py" in self.names or module in self.names


def _normalized(name: str) -> str:
    if name.startswith("/"):
        raise ContextArchiveError(
            f"Unsafe context archive: member {name!r} has an absolute path", name)
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ContextArchiveError(
            f"Unsafe context archive: member {name!r} leaves the context directory ('..')",
            name)
    return "/".join(parts)


def _check_symlink(path: str, target: str, links: Set[str]) -> None:
    if not target or target.startswith("/"):
        raise ContextArchiveError(
            f"Unsafe context archive: link {path!r} points to {target!r}, outside the "
            "context directory (only relative links inside it are allowed)", path)
    resolved: List[str] = path.split("/")[:-1]
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise ContextArchiveError(
                    f"Unsafe context archive: link {path!r} points to {target!r}, outside "
                    "the context directory", path)
            resolved.pop()
            continue
        resolved.append(part)
        if "/".join(resolved) in links:
            raise ContextArchiveError(
                f"Unsafe context archive: link {path!r} points through another link "
                f"({'/'.join(resolved)!r})", path)


def _check_member(member: tarfile.TarInfo, path: str, links: Set[str],
                  files: Set[str]) -> None:
    parents = path.split("/")
    for i in range(1, len(parents)):
        if "/".join(parents[:i]) in links:
            raise ContextArchiveError(
                f"Unsafe context archive: member {member.name!r} lies inside the link "
                f"{'/'.join(parents[:i])!r}", member.name)
    if member.issym():
        _check_symlink(path, member.linkname, links)
    elif member.islnk():
        try:
            target: Optional[str] = _normalized(member.linkname)
        except ContextArchiveError:
            target = None
        if target not in files:
            raise ContextArchiveError(
                f"Unsafe context archive: hard link {member.name!r} points to "
                f"{member.linkname!r}, which is not an earlier file of the archive",
                member.name)
    elif not (member.isfile() or member.isdir()):
        raise ContextArchiveError(
            f"Unsupported context archive member {member.name!r}: only files, directories "
            "and links are allowed (not devices or FIFOs)", member.name)


def check_context_archive(data: bytes, max_unpacked_bytes: int = MAX_UNPACKED_CONTEXT_BYTES,
                          max_members: int = MAX_CONTEXT_MEMBERS,
                          max_ratio: Optional[float] = None,
                          ratio_floor: int = 0) -> ContextArchive:
    """Check an uploaded context archive (a tar, usually gzipped) without extracting it.

    Args:
        data: the archive's bytes.
        max_unpacked_bytes: the most bytes its files may hold unpacked.
        max_members: the most entries it may have.
        max_ratio: the most its files may hold unpacked per packed byte (the
            master's ``limits.max_context_ratio``), for contexts over ``ratio_floor``
            bytes unpacked; checked as the archive is read, so a bomb stops early.

    Returns:
        The member names (normalized) and the unpacked size.

    Raises:
        ContextArchiveError: naming the first unsafe or unreadable entry.

    Example::

        names = check_context_archive(pack_context("model_dir")).names
    """
    names: List[str] = []
    links: Set[str] = set()
    files: Set[str] = set()
    seen: Dict[str, str] = {}
    total = 0
    ratio_cap = max(int(max_ratio * len(data)), ratio_floor) if max_ratio else None
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|*") as tar:
            for member in tar:
                if len(names) >= max_members:
                    raise ContextArchiveError(
                        f"The context archive has more than {max_members} entries; exclude "
                        "files with a .detignore file")
                path = _normalized(member.name)
                if not path:
                    continue  # the root directory itself
                _check_member(member, path, links, files)
                if path in seen and (seen[path] != "dir" or not member.isdir()):
                    raise ContextArchiveError(
                        f"Unsafe context archive: member {member.name!r} appears twice",
                        member.name)
                seen[path] = "dir" if member.isdir() else "other"
                if member.issym():
                    links.add(path)
                elif member.isfile():
                    files.add(path)
                    total += member.size
                    if ratio_cap is not None and total > ratio_cap:
                        raise ContextArchiveError(
                            f"The context directory is over {ratio_cap / 2**20:.1f} MiB "
                            f"unpacked (at {member.name!r}), more than {max_ratio:g} times "
                            f"its {len(data)} packed bytes (the master's "
                            "limits.max_context_ratio)", member.name)
                    if total > max_unpacked_bytes:
                        raise ContextArchiveError(
                            f"The context directory is over {max_unpacked_bytes / 2**20:.0f} "
                            f"MiB unpacked (at {member.name!r}); exclude large files with a "
                            ".detignore file", member.name)
                names.append(path)
    except ContextArchiveError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise ContextArchiveError(f"model_def is not a readable tar.gz archive: {e}") from None
    if not names:
        raise ContextArchiveError("model_def is an empty archive: the context directory "
                                  "has no files")
    return ContextArchive(names, total)


def extract_context(data: bytes, dest: str) -> ContextArchive:
    """Check ``data`` (:func:`check_context_archive`) and extract it into ``dest``.

    Raises:
        ContextArchiveError: before anything is written, for an unsafe archive.
    """
    found = check_context_archive(data)
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        tar.extractall(dest, filter="data")
    return found

