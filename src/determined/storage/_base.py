"""The checkpoint storage contract every backend keeps.

A checkpoint is a directory named by a UUID. ``store_path`` hands out a private
scratch directory and publishes it under its UUID only after the block exits
without error: a reader never sees a half-written checkpoint, and a crash
mid-write leaves at most scratch files (or objects) that ``list_checkpoints``
does not report. ``restore_path`` yields a local directory with the checkpoint's
files. Backends are safe to use from several processes at once.

Besides checkpoints, a backend stores plain directories (``upload_dir`` /
``download_dir``) under relative paths such as ``tensorboard/experiment/1/...``,
for files that follow checkpoint storage (TensorBoard event files).
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
from typing import AbstractSet, Any, Callable, Dict, Iterator, List, Mapping, Optional

from determined.errors import CheckpointError
from determined.storage._owners import owns_checkpoint

__all__ = ["Selector", "StorageManager", "checkpoint_ref_uuid", "unrecorded_later_checkpoints"]

#: Picks the files of a checkpoint to fetch: relative path ("code/model.py") -> wanted.
Selector = Callable[[str], bool]


class StorageManager(abc.ABC):
    #: Whether :meth:`describe` is a local directory holding the checkpoint.
    local_paths = True

    @abc.abstractmethod
    @contextlib.contextmanager
    def store_path(self, uuid: str) -> Iterator[str]:
        """Yield a directory to write checkpoint ``uuid`` into; publish it on success."""

    @abc.abstractmethod
    @contextlib.contextmanager
    def restore_path(self, uuid: str, selector: Optional[Selector] = None) -> Iterator[str]:
        """Yield a local directory holding checkpoint ``uuid``'s files. A store that must
        fetch them fetches only those ``selector`` accepts; one whose files are local
        already yields their directory, every file in it."""

    @abc.abstractmethod
    def delete(self, uuid: str) -> None:
        """Remove checkpoint ``uuid``'s files (no error if already gone)."""

    @abc.abstractmethod
    def list_checkpoints(self) -> List[str]:
        """UUIDs of the complete checkpoints in storage."""

    @abc.abstractmethod
    def describe(self, uuid: str) -> str:
        """Where checkpoint ``uuid`` lives, for people (a path or URL)."""

    def unusable(self, trials_run_here: bool = False) -> Optional[str]:
        """Why this storage surely cannot hold checkpoints (e.g. its bucket does not
        exist), checked before an experiment is stored; None when it can or when that
        cannot be told from here (the agents may have other credentials or mounts).
        ``trials_run_here``: this machine's credentials (environment, profile) and file
        systems are the trials' too, so they count. Nothing is created."""
        return None

    def checkpoint_metadata(self, uuid: str) -> Optional[Dict[str, Any]]:
        """Stored checkpoint ``uuid``'s ``metadata.json``; None when it has none readable."""
        try:
            with open(os.path.join(self.describe(uuid), "metadata.json"), encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError, CheckpointError):
            return None
        return meta if isinstance(meta, dict) else None

    def trial_checkpoints(self, experiment_id: int, trial_id: int,
                          skip: AbstractSet[str] = frozenset(), owner: str = ""
                          ) -> Dict[str, int]:
        """The complete checkpoints whose metadata names this trial: UUID -> batches
        (those without a readable batch count, and those in ``skip``, are left out:
        reading metadata costs a request per checkpoint in an object store). With
        ``owner`` (``TrialEnv.owner``), only those whose metadata names that owner too:
        another master or local records directory numbers its trials from 1 as well."""
        out: Dict[str, int] = {}
        for uuid in self.list_checkpoints():
            if uuid in skip:
                continue
            meta = self.checkpoint_metadata(uuid)
            if meta is None or (meta.get("experiment_id"), meta.get("trial_id")) != (
                    experiment_id, trial_id) or not owns_checkpoint(owner, meta):
                continue
            batches = meta.get("batch_number")
            if isinstance(batches, int) and not isinstance(batches, bool):
                out[uuid] = batches
        return out

    def remove_leftovers(self, experiment_id: int, trial_id: int,
                         recorded: Optional[AbstractSet[str]], restored: Optional[str],
                         restored_batches: int, owner: str = "") -> List[str]:
        """At a trial's start, when none of its earlier processes can still write:
        delete the complete checkpoints it wrote that no record names (``recorded``:
        the UUIDs its host has a record of; None when the host cannot tell, then
        nothing is deleted) and that hold more batches than the one it resumes from
        (killed before reporting them, or rolled back). Returns what was removed."""
        if recorded is None:
            return []
        doomed = unrecorded_later_checkpoints(
            self.trial_checkpoints(experiment_id, trial_id, skip=recorded, owner=owner),
            recorded, restored, restored_batches)
        for uuid in doomed:
            self.delete(uuid)
        return [self.describe(uuid) for uuid in doomed]

    def resources(self, uuid: str) -> Dict[str, int]:
        """Every file of stored checkpoint ``uuid``: relative path -> size in bytes."""
        root = self.describe(uuid)
        out: Dict[str, int] = {}
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                out[os.path.relpath(path, root)] = os.path.getsize(path)
        return out

    def download(self, uuid: str, dest: str) -> None:
        """Copy checkpoint ``uuid``'s files into the new directory ``dest``."""
        import shutil

        with self.restore_path(uuid) as path:
            shutil.copytree(path, dest)

    def upload_dir(self, local_dir: str, dest: str) -> None:
        """Copy every file under ``local_dir`` to ``dest`` (a relative storage path),
        replacing files of the same name.

        Example:
            >>> storage.upload_dir("/tmp/tensorboard", "tensorboard/experiment/1/trial/2")  # doctest: +SKIP
        """
        raise NotImplementedError(f"{type(self).__name__} cannot store directories")

    def download_dir(self, src: str, local_dir: str) -> List[str]:
        """Copy every file under ``src`` (a relative storage path) into ``local_dir``;
        return the relative paths copied (empty when ``src`` holds nothing)."""
        raise NotImplementedError(f"{type(self).__name__} cannot store directories")

    def list_dir(self, path: str) -> List[str]:
        """The files under ``path`` (a relative storage path), relative to it; empty
        when it holds nothing."""
        raise NotImplementedError(f"{type(self).__name__} cannot store directories")

    def delete_dir(self, path: str) -> int:
        """Remove every file under ``path`` (a relative storage path, never the root);
        return how many there were (0 when none: no error). Fails (``StorageError``,
        ``OSError``) when some could not be removed.

        Example:
            >>> storage.delete_dir("tensorboard/experiment/1")  # doctest: +SKIP
            12
        """
        raise NotImplementedError(f"{type(self).__name__} cannot store directories")

    def describe_dir(self, path: str) -> str:
        """Where the directory ``path`` (a relative storage path) lives, for people."""
        raise NotImplementedError(f"{type(self).__name__} cannot store directories")

    @contextlib.contextmanager
    def local_checkpoint(self, ref: str) -> Iterator[str]:
        """A local directory for ``ref``: a directory path as it is, otherwise what
        :meth:`describe` returned for a checkpoint (a URL), fetched by its UUID."""
        if os.path.isdir(ref):
            yield ref
            return
        with self.restore_path(checkpoint_ref_uuid(ref)) as path:
            yield path


def checkpoint_ref_uuid(ref: str) -> str:
    """The UUID in a checkpoint reference (``s3://b/p/<uuid>``, a path or a UUID)."""
    uuid = ref.rstrip("/").rsplit("/", 1)[-1]
    if not uuid:
        raise CheckpointError(f"Expected a checkpoint path or URL. Received: {ref!r}")
    return uuid


def unrecorded_later_checkpoints(found: Mapping[str, int], recorded: AbstractSet[str],
                                 restored: Optional[str], restored_batches: int) -> List[str]:
    """Which of a trial's stored checkpoints (``found``: UUID -> batches) are leftovers:
    no record names them and they hold more batches than the restored one. File
    times never decide: checkpoints written milliseconds apart are told apart by
    their records and batch counts alone."""
    return sorted(uuid for uuid, batches in found.items()
                  if uuid not in recorded and uuid != restored and batches > restored_batches)
