"""Copying a trial's event files to checkpoint storage, so they outlive its process.

The chief syncs files that are new or have grown since the last sync (see
:class:`~determined.tensorboard.TrialTensorboard` for when). A new file is copied to a
temporary name and renamed over the target, so a reader (a TensorBoard task) never
sees a half-copied file; a grown one gets only its new bytes appended, as TensorBoard
expects of event files.
"""

from __future__ import annotations

import abc
import logging
import os
import pathlib
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = ["S3TensorboardManager", "SharedFSTensorboardManager", "StorageTensorboardManager",
           "TensorboardManager"]

PathLike = Union[str, "os.PathLike[str]"]

logger = logging.getLogger("determined")


class TensorboardManager(abc.ABC):
    """Syncs the event files under ``base_path`` to ``sync_path`` in some storage.

    Args:
        base_path: the local directory the trial writes event files to.
        sync_path: the trial's directory relative to the storage root.
    """

    def __init__(self, base_path: PathLike, sync_path: PathLike):
        self.base_path = pathlib.Path(base_path)
        self.sync_path = pathlib.Path(sync_path)
        self._synced: Dict[pathlib.Path, Tuple[int, float]] = {}

    def list_tfevents(self) -> List[pathlib.Path]:
        """Every event file under ``base_path`` (recursively: Estimator writes ``eval/``)."""
        found = []
        for dirpath, _, files in os.walk(self.base_path):
            found.extend(pathlib.Path(dirpath, f) for f in files if "tfevents" in f)
        return sorted(found)

    def to_sync(self) -> List[pathlib.Path]:
        """Event files that are new or changed since the last :meth:`sync`."""
        changed = []
        for path in self.list_tfevents():
            try:
                st = os.stat(path)
            except OSError:
                continue
            if self._synced.get(path) != (st.st_size, st.st_mtime):
                changed.append(path)
        return changed

    def sync(self) -> None:
        """Upload what :meth:`to_sync` lists; failures are logged, never raised."""
        for path in self.to_sync():
            try:
                st = os.stat(path)
                self._upload(path, os.path.relpath(path, self.base_path))
                self._synced[path] = (st.st_size, st.st_mtime)
            except OSError as e:
                logger.warning("cannot sync TensorBoard file %s: %s", path, e)

    @abc.abstractmethod
    def _upload(self, local_path: pathlib.Path, relative: str) -> None:
        """Store ``local_path`` as ``sync_path/relative``."""


class SharedFSTensorboardManager(TensorboardManager):
    """Event files copied into a shared file system's checkpoint storage directory.

    Args:
        storage_path: the checkpoint storage root (``host_path/storage_path``).
        base_path, sync_path: as :class:`TensorboardManager` (positional or keyword).
    """

    def __init__(self, storage_path: PathLike, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.storage_path = pathlib.Path(storage_path)
        self.target = self.storage_path / self.sync_path

    def _upload(self, local_path: pathlib.Path, relative: str) -> None:
        dest = os.path.join(self.target, relative)
        synced = self._synced.get(local_path)
        try:
            dest_size = os.path.getsize(dest)
        except OSError:
            dest_size = -1
        if synced is not None and dest_size == synced[0]:
            # An event file only grows: append what is new (as TensorBoard reads it).
            with open(local_path, "rb") as src, open(dest, "ab") as out:
                src.seek(dest_size)
                shutil.copyfileobj(src, out)
            return
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = os.path.join(os.path.dirname(dest), f".{os.path.basename(dest)}.part")
        shutil.copyfile(local_path, tmp)
        os.replace(tmp, dest)


class StorageTensorboardManager(TensorboardManager):
    """Event files uploaded through a checkpoint storage backend's ``upload_dir``
    (object stores: S3, GCS): changed files are staged and uploaded as one directory.

    Args:
        storage: a :class:`determined.storage.StorageManager` with ``upload_dir``.
    """

    def __init__(self, storage: Any, base_path: PathLike, sync_path: PathLike):
        super().__init__(base_path, sync_path)
        self.storage = storage

    def sync(self) -> None:
        changed = self.to_sync()
        if not changed:
            return
        with tempfile.TemporaryDirectory(prefix="det-tb-sync-") as staging:
            sizes = {}
            for path in changed:
                try:
                    st = os.stat(path)
                    dest = os.path.join(staging, os.path.relpath(path, self.base_path))
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    shutil.copyfile(path, dest)
                    sizes[path] = (st.st_size, st.st_mtime)
                except OSError as e:
                    logger.warning("cannot sync TensorBoard file %s: %s", path, e)
            try:
                self.storage.upload_dir(staging, str(self.sync_path))
            except Exception as e:  # a failed upload is retried at the next sync
                logger.warning("cannot upload TensorBoard files to %s: %s", self.sync_path, e)
                return
            self._synced.update(sizes)

    def _upload(self, local_path: pathlib.Path, relative: str) -> None:  # pragma: no cover
        raise NotImplementedError("StorageTensorboardManager uploads in sync()")


class S3TensorboardManager(StorageTensorboardManager):
    """Event files uploaded to an S3 bucket (or an S3-compatible store) under
    ``[prefix/]sync_path``, through the platform's S3 checkpoint storage (needs boto3).

    Args:
        bucket: the bucket.
        access_key, secret_key: credentials; None for boto3's usual chain.
        endpoint_url: an S3-compatible store's URL; None for AWS.
        base_path, sync_path: as :class:`TensorboardManager` (positional or keyword).
        prefix: the checkpoint storage's ``prefix`` (keyword only).
    """

    def __init__(self, bucket: str, access_key: Optional[str], secret_key: Optional[str],
                 endpoint_url: Optional[str], *args: Any, **kwargs: Any):
        from determined.storage._s3 import S3StorageManager

        prefix: Optional[str] = kwargs.pop("prefix", None)
        storage = S3StorageManager(bucket, prefix=prefix, access_key=access_key,
                                   secret_key=secret_key, endpoint_url=endpoint_url)
        super().__init__(storage, *args, **kwargs)
        self.bucket = bucket
