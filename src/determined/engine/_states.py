"""Trial and experiment states, and their tables of legal transitions (the only ones:
the master's store checks stored changes against the same tables)."""

from __future__ import annotations

import enum
from typing import Dict, FrozenSet

__all__ = ["TrialState", "ExperimentState", "EngineError", "IllegalTransition", "TRANSITIONS",
           "LIVE", "TERMINAL", "EXPERIMENT_TRANSITIONS", "TERMINAL_EXPERIMENT",
           "check_experiment_transition", "recorded_trial_state"]


class TrialState(str, enum.Enum):
    """Where a trial stands.

    ``PENDING``: has work, wants a slot. ``RUNNING``: a process runs an operation.
    ``WAITING``: a process runs, but has asked for an operation the searcher has not
    sent yet. ``STOPPING``: a process was asked to checkpoint and exit (pause,
    preemption, suspension of an idle trial, cancel). ``KILLING``: a process was
    killed and its exit not yet seen. ``IDLE``: no process and no work (e.g. waiting
    for an ASHA promotion). ``COMPLETED``, ``ERROR``, ``CANCELED``: the end.

    Records, the API and the UI show a coarser state: :func:`recorded_trial_state`.
    """

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    STOPPING = "STOPPING"
    KILLING = "KILLING"
    IDLE = "IDLE"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELED = "CANCELED"


class ExperimentState(str, enum.Enum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    STOPPING_COMPLETED = "STOPPING_COMPLETED"
    STOPPING_CANCELED = "STOPPING_CANCELED"
    STOPPING_ERROR = "STOPPING_ERROR"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERROR = "ERROR"


_S = TrialState
#: A process is attached to the trial in these states.
LIVE: FrozenSet[TrialState] = frozenset({_S.RUNNING, _S.WAITING, _S.STOPPING, _S.KILLING})
TERMINAL: FrozenSet[TrialState] = frozenset({_S.COMPLETED, _S.ERROR, _S.CANCELED})
_EXITS = frozenset({_S.PENDING, _S.IDLE, _S.COMPLETED, _S.ERROR, _S.CANCELED})

#: state -> the states it may move to. Every trial state change goes through it.
TRANSITIONS: Dict[TrialState, FrozenSet[TrialState]] = {
    _S.PENDING: frozenset({_S.RUNNING, _S.IDLE, _S.COMPLETED, _S.CANCELED}),
    _S.RUNNING: frozenset({_S.WAITING, _S.STOPPING, _S.KILLING}) | _EXITS,
    _S.WAITING: frozenset({_S.RUNNING, _S.STOPPING, _S.KILLING}) | _EXITS,
    _S.STOPPING: frozenset({_S.KILLING}) | _EXITS,
    _S.KILLING: frozenset({_S.CANCELED}),
    _S.IDLE: frozenset({_S.PENDING, _S.COMPLETED, _S.CANCELED}),
    _S.COMPLETED: frozenset(),
    _S.ERROR: frozenset(),
    _S.CANCELED: frozenset(),
}


_E = ExperimentState
_E_STOPPING = frozenset({_E.STOPPING_COMPLETED, _E.STOPPING_CANCELED, _E.STOPPING_ERROR})
TERMINAL_EXPERIMENT: FrozenSet[ExperimentState] = frozenset({_E.COMPLETED, _E.CANCELED,
                                                             _E.ERROR})

#: experiment state -> the states it may move to (a stopping experiment may still fail).
EXPERIMENT_TRANSITIONS: Dict[ExperimentState, FrozenSet[ExperimentState]] = {
    _E.ACTIVE: frozenset({_E.PAUSED}) | _E_STOPPING,
    _E.PAUSED: frozenset({_E.ACTIVE}) | _E_STOPPING,
    _E.STOPPING_COMPLETED: frozenset({_E.COMPLETED, _E.STOPPING_ERROR}),
    _E.STOPPING_CANCELED: frozenset({_E.CANCELED, _E.STOPPING_ERROR}),
    _E.STOPPING_ERROR: frozenset({_E.ERROR}),
    _E.COMPLETED: frozenset(),
    _E.CANCELED: frozenset(),
    _E.ERROR: frozenset(),
}


class EngineError(ValueError):
    """An event that does not fit the experiment's state (an unknown trial, a report
    in the wrong state, a malformed checkpoint id)."""


class IllegalTransition(EngineError):
    """A trial was asked to move between two states the transition table does not link."""

    def __init__(self, request_id: int, old: TrialState, new: TrialState, event: str):
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[old])) or "none (terminal)"
        super().__init__(
            f"{event}: trial (request id {request_id}) cannot move from {old.value} to "
            f"{new.value}. Expected one of: {allowed}"
        )
        self.request_id, self.old, self.new, self.event = request_id, old, new, event


def check_experiment_transition(old: ExperimentState, new: ExperimentState) -> None:
    """EngineError unless the experiment may move from ``old`` to ``new``."""
    if new is not old and new not in EXPERIMENT_TRANSITIONS[old]:
        allowed = ", ".join(sorted(s.value for s in EXPERIMENT_TRANSITIONS[old]))
        raise EngineError(f"The experiment cannot move from {old.value} to {new.value}. "
                          f"Expected one of: {allowed or 'none (terminal)'}")


def recorded_trial_state(state: TrialState, experiment: ExperimentState) -> str:
    """A trial's state as its record shows it (the store's trial states,
    ``master.db.TRIAL_TRANSITIONS``): an ended trial its end, any other PAUSED while
    its experiment is paused, else ACTIVE."""
    if state in TERMINAL:
        return state.value
    return "PAUSED" if experiment is ExperimentState.PAUSED else "ACTIVE"
