"""``core.checkpoint``: store, restore, upload, download and delete checkpoints
(Determined 0.38's ``CheckpointContext``).

A checkpoint is published atomically by the trial's storage (``StorageManager``),
then registered with the host at the metadata's ``steps_completed``, so the master
counts it like a Trial's (resume, GC, ``det checkpoint``). Its ``metadata.json``
holds the script's metadata plus the platform's keys (``batch_number``,
``experiment_id``, ``trial_id``, ``owner``, ...) that storage housekeeping reads.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import pathlib
import shutil
import time
import uuid as uuidlib
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from determined._version import __version__
from determined.common import scratch
from determined.core._distributed import DistributedContext
from determined.core._session import Session, check_steps
from determined.storage import Selector, read_metadata, write_metadata
from determined.util import plain_values

__all__ = ["CheckpointContext", "DummyCheckpointContext", "DownloadMode", "merge_metadata"]

logger = logging.getLogger("determined.core")

#: Keys of metadata.json that the platform owns (the script's own are kept beside them).
_PLATFORM_KEYS = ("uuid", "batch_number", "experiment_id", "trial_id", "owner")


class DownloadMode(enum.Enum):
    """``LocalWorkersShareDownload``: one rank per machine fetches, all ranks must call
    in step. ``NoSharedDownload``: each caller fetches on its own."""

    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def merge_metadata(all_metadata: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], Dict[str, List[int]]]:
    """Merge the ranks' metadata: nested dicts merge; a key that ranks give different
    values is a conflict. Returns (merged, conflicting "/path" -> ranks)."""
    merged: Dict[str, Any] = {}
    owners: Dict[str, List[int]] = {}
    conflicts: Dict[str, List[int]] = {}

    def merge(into: Dict[str, Any], part: Dict[str, Any], rank: int, prefix: str) -> None:
        for key, value in part.items():
            path = f"{prefix}/{key}"
            if isinstance(value, dict) and isinstance(into.get(key, {}), dict):
                merge(into.setdefault(key, {}), value, rank, path)
                continue
            owners.setdefault(path, []).append(rank)
            if key in into:
                if into[key] != value:
                    conflicts[path] = owners[path]
            else:
                into[key] = value

    for rank, part in enumerate(all_metadata):
        merge(merged, part or {}, rank, "")
    return merged, conflicts


def _files(root: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


class CheckpointContext:
    """Checkpoints of the trial (or, off the platform, of the local directory)."""

    def __init__(self, session: Session, distributed: DistributedContext) -> None:
        self._session = session
        self._dist = distributed
        self._storage = session.storage

    # ------------------------------------------------------------------ storing

    @contextlib.contextmanager
    def store_path(self, metadata: Optional[Dict[str, Any]] = None, *,
                   shard: bool = False) -> Iterator[Tuple[pathlib.Path, str]]:
        """A directory to write a checkpoint into, and its storage id. On a clean exit the
        checkpoint is published, its metadata written and it is reported. Only the chief
        calls it unless ``shard=True`` (then every rank must, in step)."""
        if shard:
            with self._store_sharded(metadata) as got:
                yield got
            return
        self._require_chief("store_path(shard=False)")
        storage_id = str(uuidlib.uuid4())
        start = time.time()
        with self._storage.store_path(storage_id) as path:
            yield pathlib.Path(path), storage_id
            full = self._full_metadata(storage_id, metadata, start)
            write_metadata(path, full)
        self._report(storage_id, full)

    def upload(self, ckpt_dir: Optional[Union[str, os.PathLike]],
               metadata: Optional[Dict[str, Any]] = None, *, shard: bool = False) -> str:
        """Copy ``ckpt_dir``'s files into a new checkpoint; return its storage id. With
        ``shard=True`` every rank calls it (``ckpt_dir`` None: nothing from this rank)."""
        src = os.fspath(ckpt_dir) if ckpt_dir is not None else None
        if src is not None and not os.path.isdir(src):
            raise ValueError(f"Expected upload ckpt_dir to be a directory. Received: {src!r}")
        if not shard:
            if src is None:
                raise ValueError("upload(ckpt_dir=None, shard=False) would store nothing")
            self._require_chief("upload(shard=False)")
        elif not any(self._dist.allgather(src is not None)):
            raise ValueError("upload(shard=True): every rank passed ckpt_dir=None")
        with self.store_path(metadata, shard=shard) as (path, storage_id):
            if src is not None:
                shutil.copytree(src, path, dirs_exist_ok=True)
        return storage_id

    @contextlib.contextmanager
    def _store_sharded(self, metadata: Optional[Dict[str, Any]]
                       ) -> Iterator[Tuple[pathlib.Path, str]]:
        """Every rank writes into its own directory; the chief collects the files (by
        path on one machine, by value across machines), refuses files two ranks wrote,
        merges the ranks' metadata and publishes one checkpoint."""
        storage_id = self._dist.broadcast(str(uuidlib.uuid4()) if self._dist.rank == 0 else None)
        own = scratch.make(f"shard-{self._dist.rank}")
        try:
            yield pathlib.Path(own), storage_id
            files = _files(own)
            same_machine = self._dist.cross_size == 1
            payload = (own, sorted(files)) if same_machine or self._dist.rank == 0 else \
                (None, {p: pathlib.Path(own, p).read_bytes() for p in files})
            shards = self._dist.gather(payload)
            all_meta = self._dist.gather(metadata or {})
            error = None
            if self._dist.rank == 0:
                assert shards is not None and all_meta is not None
                try:
                    self._publish_shards(storage_id, shards, all_meta)
                except Exception as e:  # every rank must hear about it, not only the chief
                    error = f"{type(e).__name__}: {e}"
            error = self._dist.broadcast(error)
            if error:
                raise RuntimeError(f"storing sharded checkpoint {storage_id} failed: {error}")
        finally:
            shutil.rmtree(own, ignore_errors=True)

    def _publish_shards(self, storage_id: str, shards: List[Any],
                        all_meta: List[Dict[str, Any]]) -> None:
        owners: Dict[str, List[int]] = {}
        for rank, (_, names) in enumerate(shards):
            for name in names:
                owners.setdefault(name, []).append(rank)
        clashes = {n: r for n, r in owners.items() if len(r) > 1}
        if clashes:
            raise RuntimeError("ranks wrote the same checkpoint files: " + ", ".join(
                f"{n} (ranks {r})" for n, r in sorted(clashes.items())))
        merged, conflicts = merge_metadata(all_meta)
        if conflicts:
            raise RuntimeError("ranks gave conflicting metadata: " + ", ".join(
                f"{k} (ranks {r})" for k, r in sorted(conflicts.items())))
        start = time.time()
        with self._storage.store_path(storage_id) as path:
            for src, names in shards:
                for name in names:
                    dest = os.path.join(path, name)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    if src is not None:
                        shutil.copy2(os.path.join(src, name), dest)
                    else:
                        pathlib.Path(dest).write_bytes(names[name])
            full = self._full_metadata(storage_id, merged, start)
            write_metadata(path, full)
        self._report(storage_id, full)

    def _full_metadata(self, storage_id: str, metadata: Optional[Dict[str, Any]],
                       start: float) -> Dict[str, Any]:
        user = plain_values(dict(metadata or {}))
        env = self._session.env
        if "steps_completed" not in user:
            if env is not None:
                raise ValueError("checkpoint metadata needs 'steps_completed' (the steps "
                                 "trained so far) on the platform; received keys: "
                                 f"{sorted(user) or 'none'}")
            user["steps_completed"] = self._session.steps_completed
        steps = check_steps(user["steps_completed"], "checkpoint metadata")
        full: Dict[str, Any] = {
            "determined_version": __version__,
            "framework": "core",
            "format": "directory",
            "start_time": start,
            "end_time": time.time(),
        }
        if env is not None:
            full.update({"trial_seed": env.trial_seed, "hparams": env.hparams,
                         "experiment_config": env.experiment_config,
                         "entrypoint": env.experiment_config.get("entrypoint")})
        full.update(user)
        full.update({"uuid": storage_id, "batch_number": steps,
                     "experiment_id": env.experiment_id if env else 0,
                     "trial_id": env.trial_id if env else 0})
        if env is not None and env.owner:  # whose trial: see determined.storage.owns
            full["owner"] = env.owner
        return full

    def _report(self, storage_id: str, metadata: Dict[str, Any]) -> None:
        steps = int(metadata["batch_number"])
        host = self._session.host
        if host is not None:
            host.report_checkpoint(steps, storage_id, metadata)
        self._session.saw_steps(steps)
        self._session.latest_checkpoint = (steps, storage_id, metadata)
        logger.info("checkpoint %s stored (steps_completed %d)", storage_id, steps)

    def _require_chief(self, what: str) -> None:
        if self._dist.rank != 0:
            raise RuntimeError(f"only the chief (rank 0) may call {what}; this is rank "
                               f"{self._dist.rank} (use shard=True to store from every rank)")

    # ------------------------------------------------------------------ reading

    @contextlib.contextmanager
    def restore_path(self, storage_id: str,
                     download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *,
                     selector: Optional[Selector] = None) -> Iterator[pathlib.Path]:
        """A local directory holding checkpoint ``storage_id``'s files. From an object
        store (S3, GCS) only the files ``selector`` accepts (it gets each path relative
        to the checkpoint, e.g. ``"code/model.py"``) are fetched, into a directory
        removed afterwards. On a shared file system the checkpoint's own directory is
        yielded, every file in it whatever ``selector`` says: treat it as read-only.
        With ``LocalWorkersShareDownload`` every rank calls it in step and the local
        chief fetches for its machine (with its own ``selector``)."""
        self._check_id(storage_id)
        mode = DownloadMode(download_mode)
        if mode is DownloadMode.NoSharedDownload or self._dist.local_size < 2:
            with self._storage.restore_path(storage_id, selector) as path:
                yield pathlib.Path(path)
            return
        if self._dist.local_rank == 0:
            announced = False
            try:
                with self._storage.restore_path(storage_id, selector) as path:
                    self._dist.broadcast_local((path, None))
                    announced = True
                    try:
                        yield pathlib.Path(path)
                    finally:
                        self._dist.gather_local(None)  # the others are done with it
            except Exception as e:
                if not announced:  # the others wait for a path: tell them instead
                    self._dist.broadcast_local((None, f"{type(e).__name__}: {e}"))
                raise
        else:
            path, error = self._dist.broadcast_local(None)
            if error:
                raise RuntimeError(f"restoring checkpoint {storage_id} failed on the local "
                                   f"chief: {error}")
            try:
                yield pathlib.Path(path)
            finally:
                self._dist.gather_local(None)

    def download(self, storage_id: str, ckpt_dir: Union[str, os.PathLike],
                 download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *,
                 selector: Optional[Selector] = None) -> None:
        """Copy checkpoint ``storage_id``'s files (those ``selector`` accepts; from an
        object store only those are fetched) into ``ckpt_dir`` (created if missing)."""
        dest = os.fspath(ckpt_dir)
        mode = DownloadMode(download_mode)
        shared = mode is DownloadMode.LocalWorkersShareDownload and self._dist.local_size > 1
        with self.restore_path(storage_id, mode, selector=selector) as path:
            if shared and self._dist.local_rank != 0:
                return  # the local chief copies for this machine
            for name in _files(os.fspath(path)):
                if selector is not None and not selector(name):
                    continue
                target = os.path.join(dest, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(os.path.join(path, name), target)
            os.makedirs(dest, exist_ok=True)

    def get_metadata(self, storage_id: str) -> Dict[str, Any]:
        """Checkpoint ``storage_id``'s ``metadata.json``."""
        self._check_id(storage_id)
        meta = self._storage.checkpoint_metadata(storage_id) if self._storage.local_paths else None
        if meta is None:
            with self._storage.restore_path(storage_id) as path:
                meta = read_metadata(path)
        return meta

    def delete(self, storage_id: str) -> None:
        """Remove checkpoint ``storage_id`` from storage."""
        self._check_id(storage_id)
        self._storage.delete(storage_id)

    @staticmethod
    def _check_id(storage_id: Any) -> None:
        if not isinstance(storage_id, str) or not storage_id or "/" in storage_id:
            raise ValueError(f"Expected a checkpoint storage_id (a UUID string). "
                             f"Received: {storage_id!r}")


DummyCheckpointContext = CheckpointContext
