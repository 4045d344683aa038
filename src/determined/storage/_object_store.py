"""Checkpoints in an object store (S3, GCS): the part every store shares.

A checkpoint ``<uuid>`` is the objects under ``[prefix/]<uuid>/``. It is written
to a local scratch directory first; on success every file is uploaded (in
parallel, streamed from disk) and ``metadata.json`` last. A checkpoint exists
when its ``metadata.json`` does, so a writer killed mid-upload leaves only
objects that ``list_checkpoints`` and ``restore_path`` ignore (and the trial
never reports that checkpoint to its host: it reports after ``store_path``
returns). Deleting removes ``metadata.json`` first for the same reason.

A store only needs the object primitives of :class:`ObjectStore`.
"""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import os
import shutil
import tempfile
import threading
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

from determined.common import scratch as scratch_dirs
from determined.errors import CheckpointError, StorageError
from determined.storage._base import Selector, StorageManager
from determined.storage._metadata import METADATA_FILE

__all__ = ["ObjectStore", "ObjectStoreStorageManager", "TRANSFER_THREADS"]

#: Files moved at once per checkpoint upload or download.
TRANSFER_THREADS = 8

T = TypeVar("T")


class ObjectStore(abc.ABC):
    """The operations on one bucket a checkpoint store needs. Thread safe."""

    #: URL scheme for people, e.g. ``s3``
    scheme = ""

    def __init__(self, bucket: str):
        self.bucket = bucket

    @abc.abstractmethod
    def upload_file(self, local_path: str, key: str) -> None:
        """Stream a local file to object ``key`` (replacing it)."""

    @abc.abstractmethod
    def download_file(self, key: str, local_path: str) -> None:
        """Stream object ``key`` into a local file."""

    @abc.abstractmethod
    def list_keys(self, prefix: str) -> List[str]:
        """Keys starting with ``prefix``."""

    @abc.abstractmethod
    def list_sizes(self, prefix: str) -> Dict[str, int]:
        """Keys starting with ``prefix`` and their sizes in bytes."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """Whether object ``key`` exists."""

    @abc.abstractmethod
    def delete_keys(self, keys: Sequence[str]) -> None:
        """Delete objects (missing ones are no error)."""

    def missing_bucket(self, ambient_credentials: bool = False) -> Optional[str]:
        """Why the bucket surely cannot be used (the store said so: it does not exist,
        or it refused the config's own credentials, or with ``ambient_credentials`` those
        found here outside the config); None when it can, or when the store could not be
        asked (no credentials here, unreachable)."""
        return None

    def list_dirs(self, prefix: str) -> List[str]:
        """Names of the "directories" directly under ``prefix`` (ending in ``/``)."""
        names = {k[len(prefix):].split("/", 1)[0] for k in self.list_keys(prefix)
                 if "/" in k[len(prefix):]}
        return sorted(names)


class ObjectStoreStorageManager(StorageManager):
    """Checkpoints as objects under ``[prefix/]<uuid>/`` in one bucket.

    Args:
        store: the bucket's primitives.
        prefix: a key prefix for everything this manager stores ("" for none).
        threads: parallel transfers.
    """

    local_paths = False

    def __init__(self, store: ObjectStore, prefix: Optional[str] = None,
                 threads: int = TRANSFER_THREADS):
        self.store = store
        self.prefix = (prefix or "").strip("/")
        self.threads = max(1, threads)

    # ---- keys

    def _key(self, *parts: str) -> str:
        return "/".join(p.strip("/") for p in (self.prefix, *parts) if p.strip("/"))

    def _ckpt_prefix(self, uuid: str) -> str:
        if not uuid or "/" in uuid or uuid.startswith("."):
            raise CheckpointError(f"Expected a checkpoint UUID. Received: {uuid!r}")
        return self._key(uuid) + "/"

    def unusable(self, trials_run_here: bool = False) -> Optional[str]:
        return self.store.missing_bucket(ambient_credentials=trials_run_here)

    # ---- checkpoints

    @contextlib.contextmanager
    def store_path(self, uuid: str) -> Iterator[str]:
        prefix = self._ckpt_prefix(uuid)
        if self._call(self.store.exists, prefix + METADATA_FILE):
            raise CheckpointError(f"checkpoint {uuid} already exists at {self.describe(uuid)}")
        scratch = scratch_dirs.make("ckpt")
        try:
            yield scratch
            files = _relative_files(scratch)
            if METADATA_FILE not in files:
                raise CheckpointError(
                    f"checkpoint {uuid} has no {METADATA_FILE}; it would never be complete")
            rest = [f for f in files if f != METADATA_FILE]
            self._parallel(lambda rel: self.store.upload_file(
                os.path.join(scratch, rel), prefix + rel), rest)
            self._call(self.store.upload_file, os.path.join(scratch, METADATA_FILE),
                       prefix + METADATA_FILE)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @contextlib.contextmanager
    def restore_path(self, uuid: str, selector: Optional[Selector] = None) -> Iterator[str]:
        """A scratch directory with the checkpoint's objects (only those ``selector``
        accepts), removed afterwards."""
        prefix = self._ckpt_prefix(uuid)
        if not self._call(self.store.exists, prefix + METADATA_FILE):
            raise CheckpointError(f"checkpoint {uuid} not found at {self.describe(uuid)}")
        local = scratch_dirs.make("restore")
        try:
            self._download_prefix(prefix, local, selector)
            yield local
        finally:
            shutil.rmtree(local, ignore_errors=True)

    def download(self, uuid: str, dest: str) -> None:
        prefix = self._ckpt_prefix(uuid)
        if not self._call(self.store.exists, prefix + METADATA_FILE):
            raise CheckpointError(f"checkpoint {uuid} not found at {self.describe(uuid)}")
        os.makedirs(dest)
        self._download_prefix(prefix, dest)

    def delete(self, uuid: str) -> None:
        prefix = self._ckpt_prefix(uuid)
        self._call(self.store.delete_keys, [prefix + METADATA_FILE])  # incomplete from now on
        keys = self._call(self.store.list_keys, prefix)
        if keys:
            self._call(self.store.delete_keys, keys)

    def checkpoint_metadata(self, uuid: str) -> Optional[Dict[str, object]]:
        """Only ``metadata.json`` is fetched."""
        import json

        fd, local = tempfile.mkstemp(prefix="det-meta-")
        os.close(fd)
        try:
            self._call(self.store.download_file, self._ckpt_prefix(uuid) + METADATA_FILE, local)
            with open(local, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError, CheckpointError, StorageError):
            return None
        finally:
            os.remove(local)
        return meta if isinstance(meta, dict) else None

    def list_checkpoints(self) -> List[str]:
        root = self._key() + "/" if self.prefix else ""
        return sorted(
            name for name in self._call(self.store.list_dirs, root)
            if not name.startswith(".") and name != "tensorboard"
            and self._call(self.store.exists, f"{root}{name}/{METADATA_FILE}")
        )

    def resources(self, uuid: str) -> Dict[str, int]:
        prefix = self._ckpt_prefix(uuid)
        sizes = self._call(self.store.list_sizes, prefix)
        return {key[len(prefix):]: size for key, size in sizes.items()
                if key[len(prefix):] and not key.endswith("/")}

    def describe(self, uuid: str) -> str:
        return f"{self.store.scheme}://{self.store.bucket}/{self._key(uuid)}"

    # ---- plain directories (TensorBoard files)

    def upload_dir(self, local_dir: str, dest: str) -> None:
        prefix = self._key(dest) + "/"
        self._parallel(lambda rel: self.store.upload_file(
            os.path.join(local_dir, rel), prefix + rel), _relative_files(local_dir))

    def download_dir(self, src: str, local_dir: str) -> List[str]:
        return self._download_prefix(self._key(src) + "/", local_dir)

    def _dir_prefix(self, path: str) -> str:
        key = self._key(path)
        if key == self._key() or any(p in (".", "..") for p in path.split("/")):
            raise StorageError(f"Expected a directory inside {self.describe_dir('')}. "
                               f"Received: {path!r}")
        return key + "/"  # "experiment/1/", never experiment/10's objects

    def list_dir(self, path: str) -> List[str]:
        prefix = self._dir_prefix(path)
        return _files_under(prefix, self._call(self.store.list_keys, prefix))

    def delete_dir(self, path: str) -> int:
        prefix = self._dir_prefix(path)
        keys = self._call(self.store.list_keys, prefix)
        if keys:
            self._call(self.store.delete_keys, keys)
        return len(_files_under(prefix, keys))

    def describe_dir(self, path: str) -> str:
        return f"{self.store.scheme}://{self.store.bucket}/{self._key(path)}"

    # ---- helpers

    def _download_prefix(self, prefix: str, local: str,
                         selector: Optional[Selector] = None) -> List[str]:
        pairs: List[Tuple[str, str]] = []
        for key in self._call(self.store.list_keys, prefix):
            rel = key[len(prefix):]
            if not rel or rel.endswith("/") or (selector is not None and not selector(rel)):
                continue
            target = os.path.normpath(os.path.join(local, rel))
            if not target.startswith(os.path.normpath(local) + os.sep):
                raise CheckpointError(f"object {key!r} would be written outside {local}")
            pairs.append((key, target))
        for _, target in pairs:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        self._parallel(lambda pair: self.store.download_file(*pair), pairs)
        return sorted(key[len(prefix):] for key, _ in pairs)

    def _parallel(self, fn: Callable[[T], None], items: Iterable[T]) -> None:
        items = list(items)
        if len(items) <= 1 or self.threads == 1:
            for item in items:
                self._call(fn, item)
            return
        with concurrent.futures.ThreadPoolExecutor(min(self.threads, len(items))) as pool:
            futures = [pool.submit(self._call, fn, item) for item in items]
            for future in concurrent.futures.as_completed(futures):
                future.result()  # the first failure is raised; the rest still finish

    def _call(self, fn: Callable[..., T], *args: object) -> T:
        """Run a store operation; connection and permission problems become StorageError."""
        try:
            return fn(*args)
        except (CheckpointError, StorageError, FileNotFoundError, KeyboardInterrupt):
            raise
        except Exception as e:  # the vendors' exception trees differ
            raise StorageError(
                f"{self.store.scheme}://{self.store.bucket}: {type(e).__name__}: {e}"
            ) from e


def _files_under(prefix: str, keys: Iterable[str]) -> List[str]:
    """The file keys among ``keys`` (not "directory" markers), relative to ``prefix``."""
    return sorted(k[len(prefix):] for k in keys if k[len(prefix):] and not k.endswith("/"))


def _relative_files(root: str) -> List[str]:
    out = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            out.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(out)


_local = threading.local()


def thread_local(key: str, make: Callable[[], T]) -> T:
    """One ``make()`` per thread and key (for clients that must not be shared)."""
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = {}
    if key not in cache:
        cache[key] = make()
    return cache[key]
