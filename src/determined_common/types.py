"""Id types of upstream 0.13 (plain ints at run time)."""

from typing import NewType

ExperimentID = NewType("ExperimentID", int)
TrialID = NewType("TrialID", int)
StepID = NewType("StepID", int)
