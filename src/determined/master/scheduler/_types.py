"""Values the scheduler reads and returns: agents, tasks, allocations, decisions, policy.

Every class is a frozen dataclass that checks its fields on construction, so a
scheduling call never sees a malformed value:

    >>> Task("t1", group="exp-1", slots_needed=2, arrival=0).slots_needed
    2
    >>> Allocation("t1", (("agent-a", (0, 1)),)).slot_count
    2
"""

from __future__ import annotations

import dataclasses
import math
from typing import FrozenSet, List, Optional, Tuple

__all__ = [
    "DEFAULT_PRIORITY",
    "FITS",
    "POLICY_TYPES",
    "Agent",
    "Allocation",
    "Assignment",
    "Decision",
    "SchedulerPolicy",
    "Task",
]

#: Priority of a task whose group sets none (smaller numbers run first).
DEFAULT_PRIORITY = 42
#: Allowed values of ``SchedulerPolicy.type``.
POLICY_TYPES = ("fair_share", "priority")
#: Allowed values of ``SchedulerPolicy.fit``.
FITS = ("best", "worst")


def _check_str(owner: str, name: str, value: object, *, nonempty: bool = False) -> None:
    if not isinstance(value, str) or (nonempty and not value):
        allowed = "a non-empty str" if nonempty else "a str"
        raise ValueError(f"Expected {owner} {name} to be {allowed}. Received: {name}={value!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(owner: str, name: str, value: object, *, minimum: Optional[int]) -> None:
    if not _is_int(value) or (minimum is not None and value < minimum):  # type: ignore[operator]
        allowed = "an int" if minimum is None else f"an int >= {minimum}"
        raise ValueError(f"Expected {owner} {name} to be {allowed}. Received: {name}={value!r}")


def _check_bool(owner: str, name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"Expected {owner} {name} to be a bool. Received: {name}={value!r}")


@dataclasses.dataclass(frozen=True)
class Agent:
    """A machine offering ``slots`` slots, numbered ``0 .. slots - 1``.

    Args:
        id: Unique agent id.
        slots: Number of slots (GPUs, or CPUs on CPU-only agents); may be 0.
        enabled: A disabled agent receives no new tasks; its running tasks are left alone.
        label: Only tasks with this ``agent_label`` (or with none) may use the agent.
        disabled_slots: Slot indices that receive no new tasks (any iterable of ints).

    Example:
        >>> Agent("gpu-1", slots=8, label="a100", disabled_slots=[7]).usable_slots[-1]
        6
    """

    id: str
    slots: int
    enabled: bool = True
    label: str = ""
    disabled_slots: FrozenSet[int] = frozenset()

    def __post_init__(self) -> None:
        _check_str("Agent", "id", self.id, nonempty=True)
        _check_int(f"Agent {self.id!r}", "slots", self.slots, minimum=0)
        _check_bool(f"Agent {self.id!r}", "enabled", self.enabled)
        _check_str(f"Agent {self.id!r}", "label", self.label)
        try:
            disabled = frozenset(self.disabled_slots)
        except TypeError:
            raise ValueError(
                f"Expected Agent {self.id!r} disabled_slots to be an iterable of slot indices. "
                f"Received: disabled_slots={self.disabled_slots!r}"
            ) from None
        bad = sorted(repr(s) for s in disabled if not _is_int(s) or not 0 <= s < self.slots)
        if bad:
            raise ValueError(
                f"Expected Agent {self.id!r} disabled_slots to be slot indices in "
                f"[0, {self.slots}). Received: {', '.join(bad)}"
            )
        object.__setattr__(self, "disabled_slots", disabled)

    @property
    def usable_slots(self) -> Tuple[int, ...]:
        """Slot indices that may receive new tasks (none when the agent is disabled)."""
        if not self.enabled:
            return ()
        return tuple(s for s in range(self.slots) if s not in self.disabled_slots)


@dataclasses.dataclass(frozen=True)
class Task:
    """One trial asking for ``slots_needed`` slots at once (all or nothing).

    ``weight``, ``max_slots`` and ``priority`` belong to the task's ``group`` (its
    experiment) and must be equal for every task of the group in one call.

    Args:
        id: Unique task id.
        group: The experiment the task belongs to; fair share is computed per group.
        slots_needed: Slots the task needs (``slots_per_trial``), at least 1.
        arrival: Orders tasks first come, first served (smaller is earlier).
        weight: The group's fair-share weight, > 0.
        priority: The group's priority for the ``priority`` policy (smaller runs first);
            ``None`` means :data:`DEFAULT_PRIORITY`.
        max_slots: Cap on the slots the whole group may hold, or ``None``.
        agent_label: If non-empty, the task only runs on agents with this label.
        preemptible: ``False`` keeps the scheduler from ever preempting the task.

    Example:
        >>> Task("t7", group="exp-3", slots_needed=1, arrival=7, weight=2.0).effective_priority
        42
    """

    id: str
    group: str
    slots_needed: int
    arrival: int
    weight: float = 1.0
    priority: Optional[int] = None
    max_slots: Optional[int] = None
    agent_label: str = ""
    preemptible: bool = True

    def __post_init__(self) -> None:
        _check_str("Task", "id", self.id, nonempty=True)
        owner = f"Task {self.id!r}"
        _check_str(owner, "group", self.group)
        _check_int(owner, "slots_needed", self.slots_needed, minimum=1)
        _check_int(owner, "arrival", self.arrival, minimum=None)
        weight = self.weight
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not (
            math.isfinite(weight) and weight > 0
        ):
            raise ValueError(f"Expected {owner} weight to be a finite number > 0. Received: weight={weight!r}")
        if self.priority is not None:
            _check_int(owner, "priority", self.priority, minimum=None)
        if self.max_slots is not None:
            _check_int(owner, "max_slots", self.max_slots, minimum=1)
        _check_str(owner, "agent_label", self.agent_label)
        _check_bool(owner, "preemptible", self.preemptible)

    @property
    def effective_priority(self) -> int:
        """``priority``, or :data:`DEFAULT_PRIORITY` when it is ``None``."""
        return DEFAULT_PRIORITY if self.priority is None else self.priority


@dataclasses.dataclass(frozen=True)
class Assignment:
    """The slots one task holds on one agent.

    Example:
        >>> Assignment("t1", "agent-a", (0, 1)).slots
        (0, 1)
    """

    task_id: str
    agent_id: str
    slots: Tuple[int, ...]


Part = Tuple[str, Tuple[int, ...]]


@dataclasses.dataclass(frozen=True)
class Allocation:
    """The slots a task holds: ``parts`` is ``((agent_id, (slot, ...)), ...)``.

    A task spans several parts only when no single eligible agent has enough slots.
    Lists are accepted and stored as tuples; slot indices are stored sorted.

    Example:
        >>> a = Allocation("t1", [("agent-a", [3, 2]), ("agent-b", [0])])
        >>> a.parts, a.slot_count
        ((('agent-a', (2, 3)), ('agent-b', (0,))), 3)
    """

    task_id: str
    parts: Tuple[Part, ...]

    def __post_init__(self) -> None:
        _check_str("Allocation", "task_id", self.task_id, nonempty=True)
        owner = f"Allocation of task {self.task_id!r}"
        received = f"Received: parts={self.parts!r}"
        try:
            raw = [(agent_id, slots) for agent_id, slots in self.parts]
        except (TypeError, ValueError):
            raise ValueError(f"Expected {owner} parts to be (agent_id, slots) pairs. {received}") from None
        if not raw:
            raise ValueError(f"Expected {owner} to have at least one part. {received}")
        parts: List[Part] = []
        for agent_id, slots in raw:
            _check_str(owner, "agent_id", agent_id, nonempty=True)
            try:
                indices = tuple(sorted(slots))
            except TypeError:
                raise ValueError(f"Expected {owner} slots to be ints >= 0. {received}") from None
            if not indices or not all(_is_int(s) and s >= 0 for s in indices):
                raise ValueError(f"Expected {owner} slots to be a non-empty set of ints >= 0. {received}")
            if len(set(indices)) != len(indices):
                raise ValueError(f"Expected {owner} slots to be distinct. {received}")
            parts.append((agent_id, indices))
        if len({agent_id for agent_id, _ in parts}) != len(parts):
            raise ValueError(f"Expected {owner} to name each agent once. {received}")
        object.__setattr__(self, "parts", tuple(parts))

    @property
    def slot_count(self) -> int:
        """Total number of slots held."""
        return sum(len(slots) for _, slots in self.parts)

    @property
    def agent_ids(self) -> Tuple[str, ...]:
        """The agents used, in part order."""
        return tuple(agent_id for agent_id, _ in self.parts)

    def assignments(self) -> Tuple[Assignment, ...]:
        """One :class:`Assignment` per part."""
        return tuple(Assignment(self.task_id, agent_id, slots) for agent_id, slots in self.parts)


@dataclasses.dataclass(frozen=True)
class Decision:
    """What one scheduling call asks the master to do.

    Args:
        start: Tasks to start now, each with the slots it gets, in start order.
        preempt: Ids of running tasks to stop gracefully (pause); their slots become
            free only once they have stopped, so they are never reused in the same call.
            A call repeats a preemption while the task is still running.

    Example:
        >>> Decision().is_empty
        True
    """

    start: List[Allocation] = dataclasses.field(default_factory=list)
    preempt: List[str] = dataclasses.field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to start and nothing to preempt."""
        return not self.start and not self.preempt


@dataclasses.dataclass(frozen=True)
class SchedulerPolicy:
    """The master's ``scheduler`` settings.

    Args:
        type: ``"fair_share"`` (weighted max-min across groups) or ``"priority"``
            (first come, first served by priority then arrival).
        fit: ``"best"`` packs tasks onto the agent with the fewest free slots that fits;
            ``"worst"`` spreads them onto the agent with the most free slots.

    Example:
        >>> SchedulerPolicy(type="priority", fit="worst").fit
        'worst'
    """

    type: str = "fair_share"
    fit: str = "best"

    def __post_init__(self) -> None:
        if self.type not in POLICY_TYPES:
            raise ValueError(
                f"Expected SchedulerPolicy type to be one of {', '.join(POLICY_TYPES)}. "
                f"Received: type={self.type!r}"
            )
        if self.fit not in FITS:
            raise ValueError(
                f"Expected SchedulerPolicy fit to be one of {', '.join(FITS)}. Received: fit={self.fit!r}"
            )
