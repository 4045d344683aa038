"""Pack a context (model definition) directory as a tar.gz, honouring ``.detignore``."""

from __future__ import annotations

import fnmatch
import io
import os
import tarfile
from typing import List

from determined.common.api._context_archive import extract_context

__all__ = ["pack_context", "unpack_context", "MAX_CONTEXT_BYTES"]

#: Upload limit for a packed context directory (SPEC 6.3; 96 MB in the API docs).
MAX_CONTEXT_BYTES = 96 * 1000 * 1000

_ALWAYS = ["__pycache__/", "*.pyc", "*.pyo", "*$py.class", ".detignore"]


def _read_patterns(root: str) -> List[str]:
    path = os.path.join(root, ".detignore")
    patterns = list(_ALWAYS)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append(line)
    return patterns


def _ignored(rel: str, is_dir: bool, patterns: List[str]) -> bool:
    """Simplified gitignore matching: later patterns win, ``!`` negates, a trailing
    ``/`` matches directories only, a pattern with ``/`` is anchored at the root."""
    ignored = False
    name = rel.rsplit("/", 1)[-1]
    for pattern in patterns:
        negate = pattern.startswith("!")
        p = pattern[1:] if negate else pattern
        if p.endswith("/"):
            if not is_dir:
                continue
            p = p[:-1]
        if "/" in p:
            hit = fnmatch.fnmatchcase(rel, p.lstrip("/"))
        else:
            hit = fnmatch.fnmatchcase(name, p)
        if hit:
            ignored = not negate
    return ignored


def pack_context(root: str) -> bytes:
    """The directory as tar.gz bytes (POSIX paths, modes and mtimes kept)."""
    if not os.path.isdir(root):
        raise ValueError(f"Expected a context directory. Received: {root!r} is not a directory")
    root = os.path.abspath(root)
    patterns = _read_patterns(root)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            reldir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            reldir = "" if reldir == "." else reldir + "/"
            dirnames[:] = sorted(d for d in dirnames if not _ignored(reldir + d, True, patterns))
            for d in dirnames:
                tar.add(os.path.join(dirpath, d), arcname=reldir + d, recursive=False)
            for fname in sorted(filenames):
                if not _ignored(reldir + fname, False, patterns):
                    tar.add(os.path.join(dirpath, fname), arcname=reldir + fname)
    return buf.getvalue()


def unpack_context(data: bytes, dest: str) -> None:
    """Extract packed context bytes into ``dest`` after checking them
    (:func:`~determined.common.api.check_context_archive`: no traversal, no links out,
    bounded size); raises ``ContextArchiveError`` before writing anything."""
    extract_context(data, dest)
