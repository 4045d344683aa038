"""What an experiment run sees of the master: :class:`ExperimentHost`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from determined.master.experiments._experiment import ExperimentRun
    from determined.master.experiments._trial import TrialHandle

__all__ = ["ExperimentHost"]


class ExperimentHost(Protocol):
    """The master as one :class:`ExperimentRun` needs it (the master's
    :class:`~determined.master.experiments.Experiments` service implements it). Called
    with the experiments' lock held."""

    def kill_process(self, trial_id: int) -> None:
        """Kill the trial's process now (its exit is reported as usual)."""

    def wake(self, experiment_id: int) -> None:
        """Something the scheduler or this experiment's waiting runners depend on
        changed: wake both."""

    def wake_scheduler(self) -> None:
        """Run a scheduling pass soon (no runner needs waking)."""

    def trial_added(self, run: "ExperimentRun", trial: "TrialHandle") -> None:
        """The run has a new trial record: its runner may report from now on."""

    def finished(self, run: "ExperimentRun") -> None:
        """The run has ended: it and its trials leave the registry."""
