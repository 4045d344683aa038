"""What a trial's chief process does for TensorBoard: write the platform's metrics and
sync the trial's event directory to checkpoint storage after each workload."""

from __future__ import annotations

import logging
import shutil
import time
from typing import Any, Dict, Optional

from determined.tensorboard._manager import (
    SharedFSTensorboardManager,
    StorageTensorboardManager,
    TensorboardManager,
)
from determined.tensorboard import _paths
from determined.tensorboard._paths import get_base_path, get_sync_path
from determined.tensorboard.metric_writers import BatchMetricWriter
from determined.tensorboard.metric_writers._event_file import EventFileWriter

__all__ = ["TrialTensorboard", "build"]

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


def build(env: Any, storage: Any) -> TrialTensorboard:
    """The chief's :class:`TrialTensorboard` for ``env`` (a TrialEnv) and its checkpoint
    storage (a StorageManager; shared-file-system storage has a ``root``)."""
    base = get_base_path()
    root = getattr(storage, "root", None)
    sync_path = get_sync_path(env.experiment_id, env.trial_id)
    manager: Optional[TensorboardManager] = None
    if isinstance(root, str) and root:
        manager = SharedFSTensorboardManager(root, base, sync_path)
    elif callable(getattr(storage, "upload_dir", None)):
        manager = StorageTensorboardManager(storage, base, sync_path)
    else:
        logger.info("TensorBoard files stay in %s: %s cannot take them", base,
                    type(storage).__name__)
    return TrialTensorboard(base, manager)
