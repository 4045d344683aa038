"""The master's experiments: the :class:`Experiments` service that owns them, one
:class:`ExperimentRun` per live experiment (an adapter around ``engine.ExperimentCore``),
its trials' handles and the :class:`ExperimentHost` it sees the master through."""

from determined.master.experiments._contexts import ContextQuotaError
from determined.master.experiments._experiment import ExperimentRun
from determined.master.experiments._host import ExperimentHost
from determined.master.experiments._service import Experiments, LiveTrial, NotFinishedError
from determined.master.experiments._trial import TrialHandle

__all__ = ["ContextQuotaError", "Experiments", "ExperimentHost", "ExperimentRun", "LiveTrial", "NotFinishedError",
           "TrialHandle"]
