"""``core.train``: metrics and progress reports (Determined 0.38's ``TrainContext``).

Reports go to the trial's host the way a Trial's do, so the master stores and shows
them alike: training as ``{"avg_metrics", "batch_metrics", "num_inputs"}``,
validation as ``{"validation_metrics", "num_inputs"}``, at ``steps_completed`` (the
trial's "batches", counted in the searcher's length unit). Only the chief reports;
other ranks' calls are ignored (with one warning).
"""

from __future__ import annotations

import enum
import logging
import math
import pathlib
from typing import Any, Callable, Dict, List, Optional

from determined.core._distributed import DistributedContext
from determined.core._session import Session, check_metrics, check_steps, trial_units
from determined.util import plain_values

__all__ = ["TrainContext", "DummyTrainContext", "EarlyExitReason", "TensorboardMode"]

logger = logging.getLogger("determined.core")


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


class TensorboardMode(enum.Enum):
    """AUTO: the platform writes reported metrics as TensorBoard events and syncs the
    event directory; MANUAL: the script writes its own and calls
    ``upload_tensorboard_files()``."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


_HOST_REASONS = {EarlyExitReason.INVALID_HP: "invalid_hp",
                 EarlyExitReason.USER_REQUESTED_STOP: "user_requested_stop"}


class TrainContext:
    """Report training and validation metrics and progress for the trial."""

    def __init__(self, session: Session, distributed: DistributedContext,
                 tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
                 tensorboard: Optional[Any] = None) -> None:
        self._session = session
        self._dist = distributed
        self._tensorboard_mode = TensorboardMode(tensorboard_mode)
        self._tensorboard = tensorboard  # a harness TrialTensorboard, chief only
        self._last_training_steps = 0
        self._warned = False

    def _chief_host(self, what: str) -> Optional[Any]:
        host = self._session.host
        if host is None and not self._warned:
            self._warned = True
            logger.warning("%s on rank %d is ignored: only the chief (rank 0) reports",
                           what, self._dist.rank)
        return host

    def set_status(self, status: str) -> None:
        """A short note on what the trial is doing (logged)."""
        logger.info("status: %s", status)

    def report_training_metrics(self, steps_completed: int, metrics: Dict[str, Any],
                                batch_metrics: Optional[List[Dict[str, Any]]] = None) -> None:
        """Training metrics after ``steps_completed`` steps; ``batch_metrics``: optional
        per-batch values (kept for the CLI and the per-batch views)."""
        steps = check_steps(steps_completed, "report_training_metrics")
        metrics = plain_values(check_metrics(metrics, "report_training_metrics"))
        if batch_metrics is not None:
            if not isinstance(batch_metrics, list) or not all(
                    isinstance(b, dict) for b in batch_metrics):
                raise TypeError("Expected report_training_metrics batch_metrics to be a list "
                                f"of dicts. Received: {type(batch_metrics).__name__}")
            batch_metrics = plain_values(batch_metrics)
        host = self._chief_host("report_training_metrics")
        if host is None:
            return
        report = {"avg_metrics": metrics,
                  "batch_metrics": batch_metrics if batch_metrics is not None else [metrics],
                  "num_inputs": 0}
        host.report_training(steps, report)
        self._session.saw_steps(steps)
        if self._tensorboard is not None and self._tensorboard_mode is TensorboardMode.AUTO:
            before = min(self._last_training_steps, steps)
            self._tensorboard.training(before, steps - before, report)
        self._last_training_steps = steps

    def report_validation_metrics(self, steps_completed: int, metrics: Dict[str, Any]) -> None:
        """Validation metrics after ``steps_completed`` steps. With the searcher's
        operations loop, ``op.report_completed(value)`` still completes the operation."""
        steps = check_steps(steps_completed, "report_validation_metrics")
        check_metrics(metrics, "report_validation_metrics")
        for name, value in metrics.items():
            if value is None:
                raise ValueError(f"validation metric {name!r} is None; expected a value")
        dropped = sorted(k for k, v in metrics.items() if isinstance(v, (bytes, bytearray)))
        if dropped:
            logger.warning("validation metrics %s are bytes and are not reported", dropped)
        values = plain_values({k: v for k, v in metrics.items() if k not in dropped})
        host = self._chief_host("report_validation_metrics")
        if host is None:
            return
        host.report_validation(steps, {"validation_metrics": values, "num_inputs": 0})
        self._session.saw_steps(steps)
        self._session.last_validation = (steps, values)
        if self._tensorboard is not None and self._tensorboard_mode is TensorboardMode.AUTO:
            self._tensorboard.validation(steps, values)

    def report_metrics(self, group: str, steps_completed: int,
                       metrics: Dict[str, Any]) -> None:
        """``group`` "training" or "validation" (0.38's generic form)."""
        if group == "training":
            self.report_training_metrics(steps_completed, metrics)
        elif group == "validation":
            self.report_validation_metrics(steps_completed, metrics)
        else:
            raise ValueError(f"Expected report_metrics group 'training' or 'validation'. "
                             f"Received: {group!r}")

    def report_progress(self, progress: float) -> None:
        """The trial's progress as a fraction in [0, 1]."""
        try:
            value = float(progress)
        except (TypeError, ValueError):
            raise TypeError(f"Expected report_progress progress to be a number in [0, 1]. "
                            f"Received: {progress!r}") from None
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"Expected report_progress progress in [0, 1]. Received: {progress!r}")
        host = self._chief_host("report_progress")
        report = getattr(host, "report_progress", None)
        if not callable(report):
            return
        # The host takes units of the searcher's length (max_length, or max_time of a
        # time-metric search); a config with neither takes the fraction.
        total = trial_units(self._session.config)
        report(value * total if total is not None else value)

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        """The trial ends early: ``INVALID_HP`` (reported by ``core.Context`` when the
        script raises ``det.InvalidHP``) or ``USER_REQUESTED_STOP``."""
        reason = EarlyExitReason(reason)
        host = self._chief_host("report_early_exit")
        if host is not None:
            host.report_early_exit(_HOST_REASONS[reason])

    def get_experiment_best_validation(self) -> Optional[float]:
        """The experiment's best searcher-metric value so far, when the host can tell
        (None otherwise)."""
        host = self._session.host
        best = getattr(host, "experiment_best_validation", None)
        return best() if callable(best) else None

    def get_tensorboard_path(self) -> pathlib.Path:
        """The local directory whose files are synced as the trial's TensorBoard events."""
        if self._tensorboard is not None:
            return pathlib.Path(self._tensorboard.base_path)
        from determined.tensorboard._paths import local_event_dir

        return pathlib.Path(local_event_dir(self._dist.rank))

    def upload_tensorboard_files(
        self,
        selector: Callable[[pathlib.Path], bool] = lambda _: True,
        mangler: Callable[[pathlib.Path, int], pathlib.Path] = lambda p, __: p,
    ) -> None:
        """Sync the TensorBoard directory now (MANUAL mode)."""
        if self._tensorboard_mode is TensorboardMode.AUTO:
            raise RuntimeError("upload_tensorboard_files() is for tensorboard_mode MANUAL")
        if self._tensorboard is not None:
            self._tensorboard.sync()


#: 0.38's name for the off-platform class; here one class serves both modes.
DummyTrainContext = TrainContext
