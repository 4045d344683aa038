"""A checkpoint directory as a streamed tar archive, and its safe extraction.

The master sends checkpoints to clients that cannot read the storage themselves
(``GET /api/v1/checkpoints/{uuid}/download``). Both directions stream: memory
holds a few chunks, never a whole file.
"""

from __future__ import annotations

import os
import queue
import shutil
import tarfile
import threading
from typing import IO, Iterable, Iterator, Optional

from determined.errors import CheckpointError

__all__ = ["tar_stream", "extract_tar_stream", "CHUNK"]

CHUNK = 1024 * 1024
_DONE = object()


class _QueueWriter:
    """A write-only file whose writes become queue items (bounded: backpressure)."""

    def __init__(self, q: "queue.Queue[object]"):
        self._q = q

    def write(self, data: bytes) -> int:
        if data:
            self._q.put(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def tar_stream(root: str) -> Iterator[bytes]:
    """Chunks of an uncompressed tar of every file under ``root`` (paths relative to it).

    A thread writes the archive; at most 8 chunks wait for the reader. Example:
        >>> for chunk in tar_stream("/ckpts/1f3c..."):  # doctest: +SKIP
        ...     sock.send(chunk)
    """
    q: "queue.Queue[object]" = queue.Queue(maxsize=8)
    failure: list = []
    cancelled = threading.Event()

    def write() -> None:
        try:
            with tarfile.open(fileobj=_QueueWriter(q), mode="w|", bufsize=CHUNK) as tar:  # type: ignore[call-overload]
                for dirpath, dirs, files in os.walk(root):
                    dirs.sort()
                    for name in sorted(files):
                        if cancelled.is_set():
                            return
                        path = os.path.join(dirpath, name)
                        tar.add(path, arcname=os.path.relpath(path, root), recursive=False)
        except BaseException as e:  # noqa: BLE001 - handed to the reader
            failure.append(e)
        finally:
            q.put(_DONE)

    thread = threading.Thread(target=write, name="det-tar-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                break
            yield item  # type: ignore[misc]
        if failure:
            raise failure[0]
    finally:
        cancelled.set()
        while thread.is_alive():  # unblock a writer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.05)


class _ChunkReader:
    """A read-only file over an iterator of byte chunks."""

    def __init__(self, chunks: Iterable[bytes]):
        self._it = iter(chunks)
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            try:
                self._buf += next(self._it)
            except StopIteration:
                break
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out


def extract_tar_stream(chunks: Iterable[bytes], dest: str, fileobj: Optional[IO[bytes]] = None) -> int:
    """Extract a tar made by :func:`tar_stream` into ``dest``; return the file count.

    Only regular files and directories inside ``dest`` are accepted: an absolute
    path, ``..``, a link or a device raises :class:`CheckpointError`.
    """
    source = fileobj if fileobj is not None else _ChunkReader(chunks)
    root = os.path.abspath(dest)
    os.makedirs(root, exist_ok=True)
    count = 0
    try:
        with tarfile.open(fileobj=source, mode="r|") as tar:  # type: ignore[call-overload]
            for member in tar:
                target = os.path.abspath(os.path.join(root, member.name))
                if not target.startswith(root + os.sep):
                    raise CheckpointError(f"archive member {member.name!r} lies outside {dest}")
                if member.isdir():
                    os.makedirs(target, exist_ok=True)
                    continue
                if not member.isfile():
                    raise CheckpointError(f"archive member {member.name!r} is not a regular file")
                os.makedirs(os.path.dirname(target), exist_ok=True)
                src = tar.extractfile(member)
                assert src is not None
                with open(target, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
                os.chmod(target, member.mode & 0o755 | 0o600)
                count += 1
    except tarfile.TarError as e:
        raise CheckpointError(f"the checkpoint archive is damaged: {e}") from None
    return count
