"""What a trial process needs from whoever runs it (a local driver or the master).

The runner asks its host for the trial's next operation and reports every
result back. Hosts: a pipe to the local driver (``determined.local``), the
master's REST API (cluster), or an in-process host (Native API, ``--test``).
"""

from __future__ import annotations

import abc
from typing import AbstractSet, Any, Dict, Optional, Sequence, Tuple

from determined.trial_ops import OpKind, TrialOp

__all__ = ["TrialHost", "TrialOp", "OpKind"]


class TrialHost(abc.ABC):
    """The runner's view of its driver. Calls come from one thread."""

    @abc.abstractmethod
    def next_operation(self) -> TrialOp:
        """Block until the searcher has this trial's next operation."""

    @abc.abstractmethod
    def report_training(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        """A RUN_STEP finished; ``metrics`` has batch_metrics, avg_metrics, num_inputs."""

    def report_training_batch(self, reports: Sequence[Tuple[int, Dict[str, Any]]]) -> None:
        """Several training reports ``(batches_trained, metrics)``, oldest first, as
        :meth:`report_training` each. A host that can send them at once overrides this."""
        for batches_trained, metrics in reports:
            self.report_training(batches_trained, metrics)

    def flush(self) -> None:
        """Wait until every report sent so far is stored; raise the error of one that
        failed without its caller waiting (a host that sends in the background)."""

    @abc.abstractmethod
    def report_validation(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        """A validation finished; ``metrics`` has validation_metrics and num_inputs."""

    @abc.abstractmethod
    def report_checkpoint(self, batches_trained: int, uuid: str, metadata: Dict[str, Any]) -> None:
        """A checkpoint was stored."""

    @abc.abstractmethod
    def is_best_validation(self, value: float) -> bool:
        """Whether ``value`` of the searcher metric is the best in the whole experiment."""

    def validate_op_completed(self, batches_trained: int, metrics: Dict[str, Any]) -> None:
        """The searcher's ``Validate`` operation finished with these metrics (already
        reported through ``report_validation``, possibly by an earlier workload)."""

    def report_validation_completing_op(self, batches_trained: int,
                                        metrics: Dict[str, Any]) -> None:
        """A validation that completes the searcher's current ``Validate`` operation:
        :meth:`report_validation`, then :meth:`validate_op_completed` with its
        validation metrics. A host that can tell both at once overrides this."""
        self.report_validation(batches_trained, metrics)
        self.validate_op_completed(
            batches_trained, {"validation_metrics": metrics.get("validation_metrics", {})})

    def recorded_checkpoints(self) -> Optional[AbstractSet[str]]:
        """UUIDs of every checkpoint of this trial the host has a record of (any
        state); None when it cannot tell (then no complete checkpoint is removed as
        a leftover)."""
        return None

    def experiment_best_validation(self) -> Optional[float]:
        """The experiment's best searcher-metric value so far (Core API's
        ``get_experiment_best_validation``); None when there is none or the host
        cannot tell."""
        return None

    def should_stop(self) -> bool:
        """Whether the trial must checkpoint and exit now (pause, preemption)."""
        return False

    def report_early_exit(self, reason: str) -> None:
        """The user asked to stop the trial early (``set_stop_requested``)."""

    def report_progress(self, units: float) -> None:
        """A script trial's progress in the searcher's length unit (Core API
        ``report_progress``); drivers may show it as the experiment's progress."""

    def script_exited(self, code: int) -> None:
        """A script trial's command ended with exit ``code`` (negative: killed by that
        signal); sent by the wrapper (``_script_trial``) before its process exits."""
