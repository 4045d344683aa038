"""What the Lightning and Hugging Face callbacks share: following the searcher's
operations (train to a length, validate, report the searcher metric) and counting
steps in the searcher's unit, on top of the public ``determined.core`` API.

A trial follows the searcher when it runs on the platform and its config has
``searcher.max_length``. Otherwise (``python train.py`` by hand, or a
``searcher.time_metric`` search, where the script trains its own length and the
searcher stops it through preemption) the framework's own length rules and only
progress and preemption are reported.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Dict, Iterator, Optional

from determined.config import missing_metric_text

logger = logging.getLogger("determined.core")

__all__ = ["SearcherFollower", "TrainingMetricsBuffer", "checkpoint_to_resume"]

#: Seconds between two progress reports (they cost a round trip to the trial's host).
PROGRESS_INTERVAL = 1.0


class SearcherFollower:
    """The searcher's current operation for a framework's training loop.

    ``progress`` values are in the searcher's unit: batches (optimizer steps) or epochs
    (fractional inside an epoch)."""

    def __init__(self, core_context: Any, framework: str):
        self._core = core_context
        info = core_context.info
        config: Dict[str, Any] = info.trial._config if info is not None else {}
        self._config = config
        self._framework = framework
        searcher = config.get("searcher") or {}
        self.metric: Optional[str] = searcher.get("metric")
        unit = core_context.searcher.get_configured_units()  # a core Unit or None
        self.unit: Optional[str] = unit.value.lower() if unit is not None else None
        self.max_length = core_context.searcher.get_configured_length()
        self.active = info is not None and self.max_length is not None
        self.is_chief = core_context.distributed.rank == 0
        if self.active and self.unit not in ("batches", "epochs"):
            raise ValueError(
                f"{framework} follows searcher.max_length in batches or epochs; this "
                f"experiment's searcher.max_length is in {self.unit or 'no unit'}")
        self._ops: Optional[Iterator[Any]] = None
        self.op: Optional[Any] = None
        if self.active:
            self._ops = core_context.searcher.operations()
            self.op = next(self._ops, None)
        self._last_progress_report = 0.0

    @property
    def in_epochs(self) -> bool:
        return self.unit == "epochs"

    @property
    def closed(self) -> bool:
        """The searcher has no more training for this trial."""
        return self.active and self.op is None

    def steps(self, progress: float, global_step: int) -> int:
        """``steps_completed`` for reports: whole epochs when the searcher counts epochs,
        else optimizer steps."""
        return int(math.floor(progress + 1e-9)) if self.in_epochs else int(global_step)

    def training_steps(self, progress: float, global_step: int) -> int:
        """``steps_completed`` for a training report: in epochs, the epoch being trained
        (its training metrics come before its validation; the platform drops a report at
        or below a count it already has, so ``steps`` would drop every report inside an
        epoch after the previous one's validation), else optimizer steps."""
        return int(math.ceil(progress - 1e-9)) if self.in_epochs else int(global_step)

    def reached(self, progress: float) -> bool:
        """The current operation's length is trained."""
        return self.op is not None and progress >= self.op.length - 1e-9

    def complete(self, searcher_metric: Any) -> bool:
        """Answer the current operation (chief) and move to the next one on every rank;
        False when the searcher closed the trial."""
        assert self.op is not None and self._ops is not None
        if self.is_chief:
            logger.info("searcher operation to %s %s done: %s = %s", self.op.length,
                        self.unit, self.metric, searcher_metric)
            self.op.report_completed(searcher_metric)
        self.op = next(self._ops, None)
        return self.op is not None

    def report_progress(self, progress: float, fraction: Optional[float], force: bool = False) -> None:
        """Progress to the platform (chief only, at most once per PROGRESS_INTERVAL)."""
        if not self.is_chief:
            return
        now = time.monotonic()
        if not force and now - self._last_progress_report < PROGRESS_INTERVAL:
            return
        self._last_progress_report = now
        if self.op is not None:
            self.op.report_progress(min(progress, float(self.op.length)))
        elif not self.active and fraction is not None:
            self._core.train.report_progress(max(0.0, min(1.0, fraction)))

    def check_trainer_length(self, trainer_length: Optional[float], what: str) -> None:
        """Refuse a trainer set to stop before the searcher's ``max_length``."""
        if not self.active or trainer_length is None or self.max_length is None:
            return
        if trainer_length + 1e-9 < self.max_length:
            unit = self.unit
            raise ValueError(
                f"the trainer stops after {trainer_length:g} {unit} ({what}) but the "
                f"experiment's searcher.max_length is {{{unit}: {self.max_length:g}}}: "
                f"make {what} at least searcher.max_length")

    def searcher_value(self, metrics: Dict[str, Any], fix: Optional[str] = None) -> Any:
        """The searcher metric's value in ``metrics``; else a ValueError in the shared
        wording (``config.missing_metric_text``), with ``fix``: what the user's code can
        do to report it."""
        if self.metric in metrics:
            return metrics[self.metric]
        raise ValueError(missing_metric_text(
            self._config, map(str, metrics),
            where=f"the validation metrics {self._framework} received", fix=fix))


def checkpoint_to_resume(core_context: Any) -> Optional[str]:
    """The storage id a (re)started script resumes from: the trial's latest checkpoint on
    the platform; off it, the newest one recorded in core's local directory."""
    if core_context.info is not None:
        return core_context.info.latest_checkpoint
    from determined import core

    return core.latest_local_checkpoint()


class TrainingMetricsBuffer:
    """Training metrics logged at the same ``steps_completed`` become one report (a
    framework may log several dicts per step, e.g. step and epoch aggregates); once that
    report is sent, later ones at the same steps (e.g. a run's closing summary) are
    dropped, so each step has one training row (as upstream's callbacks)."""

    def __init__(self, core_context: Any):
        self._core = core_context
        self._pending: Optional[Any] = None  # (steps, metrics)
        self._sent_steps: Optional[int] = None

    def add(self, steps: int, metrics: Dict[str, Any]) -> None:
        if steps == self._sent_steps:
            logger.debug("training metrics at steps %d already reported: %s", steps, sorted(metrics))
            return
        if self._pending is not None and self._pending[0] != steps:
            self.flush()
        if self._pending is None:
            self._pending = (steps, {})
        self._pending[1].update(metrics)

    def flush(self, below: Optional[int] = None) -> None:
        """Report the pending row; with ``below``, only if its steps are lower (a row
        still to be completed at ``below`` waits)."""
        if below is not None and self._pending is not None and self._pending[0] >= below:
            return
        pending, self._pending = self._pending, None
        if pending is None or not pending[1]:
            return
        self._sent_steps = pending[0]
        if self._core.distributed.rank == 0:
            self._core.train.report_training_metrics(pending[0], pending[1])
