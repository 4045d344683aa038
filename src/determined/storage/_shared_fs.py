"""``shared_fs`` checkpoint storage: a directory on a (possibly shared) file system."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import uuid as uuidlib
from typing import AbstractSet, Any, Iterator, List, Mapping, Optional

from determined.errors import CheckpointError, StorageError
from determined.storage._base import Selector, StorageManager
from determined.storage._owners import SCRATCH_PREFIX, owns_scratch

__all__ = ["SharedFSStorageManager", "missing_host_path"]


def missing_host_path(section: Any) -> Optional[str]:
    """Why a ``shared_fs`` section's ``host_path`` cannot be used on this machine (it
    does not exist, or is no directory); None when it can, or for other storage types.

    0.13 required ``host_path`` to exist on every agent's machine (it was mounted into
    the trial's container); creating a missing one would hide a path that is wrong, or
    a file system that is not mounted. ``storage_path`` under it is created as needed.
    """
    if not isinstance(section, Mapping) or section.get("type") != "shared_fs":
        return None
    host_path = section.get("host_path")
    if not isinstance(host_path, str) or not os.path.isabs(host_path) \
            or os.path.isdir(host_path):
        return None
    what = "is not a directory" if os.path.exists(host_path) else "does not exist"
    return (f"checkpoint_storage.host_path {host_path} {what} on {socket.gethostname()}, "
            "where trials run; create it (it must exist on every machine that runs "
            "trials, as in 0.13), or give a directory that exists")


class SharedFSStorageManager(StorageManager):
    """Checkpoints under ``host_path[/storage_path]/<uuid>``; that directory is created at
    the first write, never by making the manager (the master makes one for a cluster
    whose agents may share nothing with its machine).

    Writes go to ``.partial-<tag><uuid>-<random>`` in the same directory, are fsynced,
    then renamed to ``<uuid>`` (rename is atomic on POSIX file systems). A trial sets
    ``scratch_tag`` (:func:`~determined.storage.scratch_tag`) so that its next process
    can tell its own unfinished writes from other trials' and other owners'
    (:meth:`remove_leftovers`, :func:`~determined.storage.owns_scratch`).
    """

    scratch_tag = ""

    def __init__(self, host_path: str, storage_path: Optional[str] = None):
        if not os.path.isabs(host_path):
            raise StorageError(
                f"Expected an absolute checkpoint_storage.host_path. Received: {host_path!r}"
            )
        self.root = os.path.normpath(os.path.join(host_path, storage_path or ""))

    def _make_root(self) -> None:
        try:
            os.makedirs(self.root, exist_ok=True)
        except OSError as e:
            raise StorageError(
                f"cannot create checkpoint storage directory {self.root}: {e.strerror}"
            ) from None

    def unusable(self, trials_run_here: bool = False) -> Optional[str]:
        """Where trials run here: why the directory cannot be made (something in the way
        that is no directory, or no write access); nothing is created."""
        if not trials_run_here:
            return None  # the agents' file systems are theirs
        path = self.root
        while not os.path.exists(path):
            path = os.path.dirname(path)
        why = ("is not a directory" if not os.path.isdir(path)
               else None if os.access(path, os.W_OK | os.X_OK) else "is not writable")
        return f"cannot create checkpoint storage directory {self.root}: {path} {why}" \
            if why else None

    def _names(self) -> List[str]:
        """The entries of the root; none before the first write."""
        return os.listdir(self.root) if os.path.isdir(self.root) else []

    def _final(self, uuid: str) -> str:
        if not uuid or "/" in uuid or uuid.startswith("."):
            raise CheckpointError(f"Expected a checkpoint UUID. Received: {uuid!r}")
        return os.path.join(self.root, uuid)

    @contextlib.contextmanager
    def store_path(self, uuid: str) -> Iterator[str]:
        final = self._final(uuid)
        if os.path.exists(final):
            raise CheckpointError(f"checkpoint {uuid} already exists at {final}")
        self._make_root()
        scratch = os.path.join(
            self.root, f"{SCRATCH_PREFIX}{self.scratch_tag}{uuid}-{uuidlib.uuid4().hex[:8]}")
        os.makedirs(scratch)
        try:
            yield scratch
            _fsync_tree(scratch)
            os.rename(scratch, final)
            _fsync_dir(self.root)
        finally:
            if os.path.exists(scratch):
                shutil.rmtree(scratch, ignore_errors=True)

    @contextlib.contextmanager
    def restore_path(self, uuid: str, selector: Optional[Selector] = None) -> Iterator[str]:
        """The checkpoint's own directory (nothing is copied, so ``selector`` picks
        nothing: every file is there)."""
        final = self._final(uuid)
        if not os.path.isdir(final):
            raise CheckpointError(f"checkpoint {uuid} not found in {self.root}")
        yield final

    def remove_leftovers(self, experiment_id: int, trial_id: int,
                         recorded: Optional[AbstractSet[str]], restored: Optional[str],
                         restored_batches: int, owner: str = "") -> List[str]:
        """Also this trial's unfinished writes (scratch directories tagged with it)."""
        removed: List[str] = []
        for name in self._names():
            if owns_scratch(owner, name, experiment_id, trial_id):
                path = os.path.join(self.root, name)
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        return removed + super().remove_leftovers(experiment_id, trial_id, recorded, restored,
                                                  restored_batches, owner)

    def delete(self, uuid: str) -> None:
        shutil.rmtree(self._final(uuid), ignore_errors=True)

    def list_checkpoints(self) -> List[str]:
        return sorted(
            n for n in self._names()
            if not n.startswith(".") and n != "tensorboard"  # upload_dir's, not a checkpoint
            and os.path.isdir(os.path.join(self.root, n))
        )

    def describe(self, uuid: str) -> str:
        return self._final(uuid)

    def _inside(self, rel: str) -> str:
        path = os.path.normpath(os.path.join(self.root, rel))
        if path != self.root and not path.startswith(self.root + os.sep):
            raise StorageError(f"Expected a path inside {self.root}. Received: {rel!r}")
        return path

    def upload_dir(self, local_dir: str, dest: str) -> None:
        self._make_root()
        shutil.copytree(local_dir, self._inside(dest), dirs_exist_ok=True)

    def download_dir(self, src: str, local_dir: str) -> List[str]:
        path = self._inside(src)
        if not os.path.isdir(path):
            return []
        shutil.copytree(path, local_dir, dirs_exist_ok=True)
        return self.list_dir(src)

    def list_dir(self, path: str) -> List[str]:
        top = self._inside(path)
        return sorted(os.path.relpath(os.path.join(d, n), top)
                      for d, _, names in os.walk(top) for n in names)

    def delete_dir(self, path: str) -> int:
        top = self._inside(path)
        if top == self.root:
            raise StorageError(f"Expected a directory inside {self.root}, not the root. "
                               f"Received: {path!r}")
        count = len(self.list_dir(path))
        if os.path.islink(top) or os.path.isfile(top):
            os.remove(top)
        elif os.path.isdir(top):
            shutil.rmtree(top)  # errors are raised: the caller keeps what names the files
        return count

    def describe_dir(self, path: str) -> str:
        return self._inside(path)


def _fsync_tree(path: str) -> None:
    for dirpath, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
