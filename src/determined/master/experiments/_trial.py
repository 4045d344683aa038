"""A trial as the master's adapter names it: its database id plus the core's record."""

from __future__ import annotations

from typing import Any, Dict

from determined.engine import CoreTrial

__all__ = ["TrialHandle"]


class TrialHandle:
    """The master's handle on one trial (API routes and the scheduler hold these)."""

    def __init__(self, trial_id: int, core_trial: CoreTrial):
        self.trial_id = trial_id
        self.core = core_trial

    @property
    def request_id(self) -> int:
        return self.core.request_id

    @property
    def state(self) -> str:
        """The core's state: PENDING, RUNNING, WAITING, STOPPING, KILLING, IDLE,
        COMPLETED, ERROR or CANCELED."""
        return self.core.state.value

    @property
    def hparams(self) -> Dict[str, Any]:
        return self.core.hparams

    @property
    def seed(self) -> int:
        return self.core.seed

    @property
    def restarts(self) -> int:
        return self.core.restarts

    @property
    def arrival(self) -> int:
        return self.trial_id

    @property
    def waiting(self) -> bool:
        return self.core.state.value == "WAITING"

    def __repr__(self) -> str:
        return f"TrialHandle(trial_id={self.trial_id}, state={self.state})"

