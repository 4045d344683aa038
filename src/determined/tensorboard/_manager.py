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
import shutil
import tempfile
from typing import Any, Dict, List, Tuple

__all__ = ["SharedFSTensorboardManager", "StorageTensorboardManager", "TensorboardManager"]

logger = logging.getLogger("determined")


class TensorboardManager(abc.ABC):
    """Syncs the event files under ``base_path`` to ``sync_path`` in some storage.

    Args:
        base_path: the local directory the trial writes event files to.
        sync_path: the trial's directory relative to the storage root.
    """

    def __init__(self, base_path: str, sync_path: str):
        self.base_path = base_path
        self.sync_path = sync_path
        self._synced: Dict[str, Tuple[int, float]] = {}

    def list_tfevents(self) -> List[str]:
        """Every event file under ``base_path`` (recursively: Estimator writes ``eval/``)."""
        found = []
        for dirpath, _, files in os.walk(self.base_path):
            found.extend(os.path.join(dirpath, f) for f in files if "tfevents" in f)
        return sorted(found)

    def to_sync(self) -> List[str]:
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
    def _upload(self, local_path: str, relative: str) -> None:
        """Store ``local_path`` as ``sync_path/relative``."""


class SharedFSTensorboardManager(TensorboardManager):
    """Event files copied into a shared file system's checkpoint storage directory.

    Args:
        storage_path: the checkpoint storage root (``host_path/storage_path``).
    """

    def __init__(self, storage_path: str, base_path: str, sync_path: str):
        super().__init__(base_path, sync_path)
        self.storage_path = storage_path
        self.target = os.path.join(storage_path, sync_path)

    def _upload(self, local_path: str, relative: str) -> None:
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

    def __init__(self, storage: Any, base_path: str, sync_path: str):
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
                self.storage.upload_dir(staging, self.sync_path)
            except Exception as e:  # a failed upload is retried at the next sync
                logger.warning("cannot upload TensorBoard files to %s: %s", self.sync_path, e)
                return
            self._synced.update(sizes)

    def _upload(self, local_path: str, relative: str) -> None:  # pragma: no cover
        raise NotImplementedError("StorageTensorboardManager uploads in sync()")
