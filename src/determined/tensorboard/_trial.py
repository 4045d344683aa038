"""What a trial's chief process does for TensorBoard: write the platform's metrics and
sync the trial's event directory to checkpoint storage after each workload; and
upstream's :func:`build` of a sync manager from a ``checkpoint_storage`` section."""

from __future__ import annotations

import logging
import os
import shutil
import time
from typing import Any, Dict, Optional

from determined.tensorboard._manager import (
    S3TensorboardManager,
    SharedFSTensorboardManager,
    StorageTensorboardManager,
    TensorboardManager,
)
from determined.tensorboard import _paths
from determined.tensorboard._paths import (
    env_sync_path,
    get_base_path,
    get_sync_path,
    local_event_dir,
)
from determined.tensorboard.metric_writers import BatchMetricWriter
from determined.tensorboard.metric_writers._event_file import EventFileWriter

__all__ = ["TrialTensorboard", "build", "build_trial_tensorboard"]

logger = logging.getLogger("determined")


class TrialTensorboard:
    """The chief's TensorBoard duties for one trial.

    Event files are synced after every validation, at the end of the trial, and after
    a training workload when ``sync_period`` seconds have passed since the last sync
    (short workloads would otherwise copy files after every few batches).

    Args:
        base_path: the local event directory.
        manager: syncs it to checkpoint storage, or None (storage without a sync).
    """

    #: Seconds between syncs after training workloads.
    sync_period = 10.0

    def __init__(self, base_path: str, manager: Optional[TensorboardManager]):
        self.base_path = base_path
        self.manager = manager
        self._writer = EventFileWriter(base_path)
        self._metrics = BatchMetricWriter(self._writer)
        self._step = 0
        self._last_sync = time.monotonic()

    def training(self, total_batches_before: int, num_batches: int,
                 metrics: Dict[str, Any]) -> None:
        self._step += 1
        try:
            self._metrics.on_train_step_end(self._step, num_batches, total_batches_before,
                                            metrics)
        except (OSError, ValueError) as e:
            logger.warning("cannot write TensorBoard training metrics: %s", e)
        if time.monotonic() - self._last_sync >= self.sync_period:
            self.sync()

    def validation(self, total_batches: int, metrics: Dict[str, Any]) -> None:
        try:
            self._metrics.on_validation_step_end(self._step, total_batches, metrics)
        except (OSError, ValueError) as e:
            logger.warning("cannot write TensorBoard validation metrics: %s", e)
        self.sync()

    def sync(self) -> None:
        self._last_sync = time.monotonic()
        if self.manager is not None:
            self.manager.sync()

    def close(self) -> None:
        """Close the event file and sync everything written (Estimator summaries too);
        a temporary directory the platform chose is removed once synced."""
        self._writer.close()
        self.sync()
        if self.manager is not None and _paths.created_here and not self.manager.to_sync():
            shutil.rmtree(self.base_path, ignore_errors=True)


def build_trial_tensorboard(env: Any, storage: Any) -> TrialTensorboard:
    """The chief's :class:`TrialTensorboard` for ``env`` (a TrialEnv) and its checkpoint
    storage (a StorageManager; shared-file-system storage has a ``root``)."""
    base = local_event_dir()
    root = getattr(storage, "root", None)
    sync_path = env_sync_path(env)
    manager: Optional[TensorboardManager] = None
    if isinstance(root, str) and root:
        manager = SharedFSTensorboardManager(root, base, sync_path)
    elif callable(getattr(storage, "upload_dir", None)):
        manager = StorageTensorboardManager(storage, base, sync_path)
    else:
        logger.info("TensorBoard files stay in %s: %s cannot take them", base,
                    type(storage).__name__)
    return TrialTensorboard(base, manager)


def _shared_fs_root(config: Dict[str, Any], container_path: Optional[str]) -> str:
    """``host_path/storage_path``, with ``container_path`` in place of ``host_path``."""
    host = config["host_path"]
    storage_path = config.get("storage_path") or ""
    if container_path and os.path.isabs(storage_path):
        relative = os.path.relpath(storage_path, host)
        if relative == ".." or relative.startswith(".." + os.sep):
            raise ValueError(f"checkpoint_storage.storage_path {storage_path!r} must be "
                             f"inside host_path {host!r}")
        storage_path = relative
    return os.path.normpath(os.path.join(container_path or host, storage_path))


def build(env: Any, checkpoint_config: Dict[str, Any],
          container_path: Optional[str] = None) -> TensorboardManager:
    """The manager that syncs ``env``'s trial event files (upstream's signature).

    Args:
        env: a :class:`determined.EnvContext` (or the platform's trial environment).
        checkpoint_config: a ``checkpoint_storage`` section: ``shared_fs``, ``s3`` or
            ``gcs``.
        container_path: replaces ``host_path`` for ``shared_fs`` (where this process
            sees the storage).

    Raises:
        TypeError: the section has no ``type``, or one that is unknown here.
    """
    kind = checkpoint_config.get("type")
    if not kind or not isinstance(kind, str):
        raise TypeError("Missing 'type' parameter of storage configuration "
                        f"(a string). Received: {checkpoint_config!r}")
    base_path = get_base_path(checkpoint_config, manager=True)
    sync_path = get_sync_path(env)
    if kind == "shared_fs":
        return SharedFSTensorboardManager(_shared_fs_root(checkpoint_config, container_path),
                                          base_path, sync_path)
    if kind == "s3":
        return S3TensorboardManager(
            checkpoint_config["bucket"], checkpoint_config.get("access_key"),
            checkpoint_config.get("secret_key"), checkpoint_config.get("endpoint_url"),
            base_path, sync_path, prefix=checkpoint_config.get("prefix"))
    if kind == "gcs":
        from determined.storage import build_storage

        return StorageTensorboardManager(build_storage(checkpoint_config), base_path,
                                         sync_path)
    raise TypeError(f"Unknown storage type: {kind!r} (expected shared_fs, s3 or gcs)")
