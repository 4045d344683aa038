"""Experiment lifecycle in the master: feeds the searcher, applies its operations."""

from determined.master.experiments._experiment import ExperimentRun
from determined.master.experiments._trial import TrialState

__all__ = ["ExperimentRun", "TrialState"]
