"""Lifecycle states and their legal transitions (SPEC 1.4). Pure logic.

Experiments::

    ACTIVE <-> PAUSED
    ACTIVE | PAUSED -> STOPPING_COMPLETED | STOPPING_CANCELED | STOPPING_ERROR
    STOPPING_COMPLETED -> COMPLETED | STOPPING_ERROR
    STOPPING_CANCELED  -> CANCELED  | STOPPING_ERROR
    STOPPING_ERROR     -> ERROR

Trials: ``ACTIVE <-> PAUSED`` (with their experiment), ``ACTIVE | PAUSED -> COMPLETED |
CANCELED | ERROR``. Checkpoints:
``ACTIVE -> COMPLETED | ERROR``, ``COMPLETED -> DELETED``. Setting the current state
again is always allowed (a no-op).
"""

from typing import Dict, FrozenSet, Mapping

from determined.engine import EXPERIMENT_TRANSITIONS as _ENGINE_EXPERIMENT_TRANSITIONS
from determined.engine import ExperimentState
from determined.master.db._errors import IllegalTransitionError

__all__ = [
    "CHECKPOINT_STATES",
    "CHECKPOINT_TRANSITIONS",
    "EXPERIMENT_STATES",
    "EXPERIMENT_TRANSITIONS",
    "TERMINAL_STATES",
    "TRIAL_STATES",
    "TRIAL_TRANSITIONS",
    "USER_REQUESTABLE_STATES",
    "check_transition",
]

# The engine's experiment states (it emits them; this module checks the stored changes).
# Trials and checkpoints reuse their names.
_E = ExperimentState
ACTIVE, PAUSED = _E.ACTIVE.value, _E.PAUSED.value
STOPPING_COMPLETED, STOPPING_CANCELED, STOPPING_ERROR = (
    _E.STOPPING_COMPLETED.value, _E.STOPPING_CANCELED.value, _E.STOPPING_ERROR.value)
COMPLETED, CANCELED, ERROR = _E.COMPLETED.value, _E.CANCELED.value, _E.ERROR.value
DELETED = "DELETED"  # checkpoints only

TERMINAL_STATES: FrozenSet[str] = frozenset({COMPLETED, CANCELED, ERROR})
USER_REQUESTABLE_STATES: FrozenSet[str] = frozenset({ACTIVE, PAUSED, STOPPING_CANCELED})


#: The engine's table (``engine._states.EXPERIMENT_TRANSITIONS``) by state name.
EXPERIMENT_TRANSITIONS: Mapping[str, FrozenSet[str]] = {
    old.value: frozenset(new.value for new in news)
    for old, news in _ENGINE_EXPERIMENT_TRANSITIONS.items()
}
EXPERIMENT_STATES: FrozenSet[str] = frozenset(EXPERIMENT_TRANSITIONS)

TRIAL_TRANSITIONS: Mapping[str, FrozenSet[str]] = {
    ACTIVE: frozenset({PAUSED, COMPLETED, CANCELED, ERROR}),
    PAUSED: frozenset({ACTIVE, COMPLETED, CANCELED, ERROR}),  # follows its experiment
    COMPLETED: frozenset(),
    CANCELED: frozenset(),
    ERROR: frozenset(),
}
TRIAL_STATES: FrozenSet[str] = frozenset(TRIAL_TRANSITIONS)

CHECKPOINT_TRANSITIONS: Mapping[str, FrozenSet[str]] = {
    ACTIVE: frozenset({COMPLETED, ERROR}),
    COMPLETED: frozenset({DELETED}),
    ERROR: frozenset(),
    DELETED: frozenset(),
}
CHECKPOINT_STATES: FrozenSet[str] = frozenset(CHECKPOINT_TRANSITIONS)

_TABLES: Dict[str, Mapping[str, FrozenSet[str]]] = {
    "experiment": EXPERIMENT_TRANSITIONS,
    "trial": TRIAL_TRANSITIONS,
    "checkpoint": CHECKPOINT_TRANSITIONS,
}


def check_state(entity: str, state: object) -> str:
    """Return ``state`` if it is a state of ``entity``, else raise ``ValueError``."""
    table = _TABLES[entity]
    if not isinstance(state, str) or state not in table:
        raise ValueError(
            f"Expected {entity} state to be one of {', '.join(sorted(table))}. "
            f"Received: state={state!r}"
        )
    return state


def check_transition(entity: str, key: object, from_state: str, to_state: str) -> bool:
    """Whether ``from_state -> to_state`` changes anything; raise if it is illegal.

    Args:
        entity: ``"experiment"``, ``"trial"`` or ``"checkpoint"``.
        key: the id or uuid, only for the error message.

    Returns:
        False when ``to_state == from_state`` (nothing to do), True for a legal change.

    Raises:
        ValueError: ``to_state`` is not a state of ``entity``.
        IllegalTransitionError: the lifecycle forbids the change.

    Example:
        >>> check_transition("experiment", 1, "PAUSED", "ACTIVE")
        True
        >>> check_transition("experiment", 1, "COMPLETED", "ACTIVE")
        Traceback (most recent call last):
        ...
        determined.master.db._errors.IllegalTransitionError: experiment 1: COMPLETED -> \
ACTIVE is not allowed; experiment 1 is COMPLETED, which has ended (a final state)
    """
    check_state(entity, to_state)
    if to_state == from_state:
        return False
    allowed = _TABLES[entity].get(from_state, frozenset())
    if to_state not in allowed:
        raise IllegalTransitionError(entity, key, from_state, to_state, allowed)
    return True
