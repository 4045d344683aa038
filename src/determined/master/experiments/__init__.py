"""The master's adapter around ``engine.ExperimentCore``: :class:`ExperimentRun` and its trials' handles."""

from determined.master.experiments._experiment import ExperimentRun
from determined.master.experiments._trial import TrialHandle

__all__ = ["ExperimentRun", "TrialHandle"]
