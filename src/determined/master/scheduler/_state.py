"""Checks a scheduling call's inputs and indexes them by group.

``build_state`` turns ``(agents, pending, running)`` into a :class:`SlotPool` whose
free slots exclude the running tasks, a :class:`RunningTask` per running task (in
start order) and a :class:`Group` per experiment:

    >>> state = build_state([Agent("a", 2)], [Task("t2", "g", 1, arrival=2)],
    ...                     {"t1": (Task("t1", "g", 1, arrival=1), Allocation("t1", [("a", [0])]))})
    >>> state.groups["g"].in_pool, [t.id for t in state.groups["g"].queue], state.pool.capacity
    (1, ['t2'], 2)
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Deque, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from determined.master.scheduler._pool import SlotPool
from determined.master.scheduler._types import Agent, Allocation, Part, Task

__all__ = ["Group", "RunningTask", "State", "build_state"]


@dataclasses.dataclass
class RunningTask:
    """A running task as the scheduler sees it.

    ``pool_parts`` are its slots that are usable (enabled agent, enabled slot);
    ``outside`` counts the rest. A task is ``locked`` (never preempted by the
    scheduler) when it is not preemptible or holds any slot outside the pool.
    """

    task: Task
    allocation: Allocation
    order: int
    pool_parts: Tuple[Part, ...]
    in_pool: int
    outside: int

    @property
    def locked(self) -> bool:
        return not self.task.preemptible or self.outside > 0


@dataclasses.dataclass
class Group:
    """One experiment: its settings, running tasks and pending tasks that can ever fit.

    ``rank`` orders groups for ties (earliest task arrival, then name).
    """

    name: str
    weight: float
    max_slots: Optional[int]
    rank: Tuple[int, str]
    queue: Deque[Task] = dataclasses.field(default_factory=collections.deque)
    running: List[RunningTask] = dataclasses.field(default_factory=list)
    labels: Set[str] = dataclasses.field(default_factory=set)
    in_pool: int = 0
    outside: int = 0
    locked: int = 0

    @property
    def held(self) -> int:
        """All slots the group's running tasks hold, usable or not."""
        return self.in_pool + self.outside

    def room(self) -> Optional[int]:
        """Slots the group may still take before reaching ``max_slots`` (None: no cap)."""
        return None if self.max_slots is None else self.max_slots - self.held


@dataclasses.dataclass
class State:
    pool: SlotPool
    groups: Dict[str, Group]
    running: List[RunningTask]


def _check_unique(kind: str, ids: Sequence[str]) -> None:
    seen: Set[str] = set()
    for i in ids:
        if i in seen:
            raise ValueError(f"Expected unique {kind} ids. Received: {i!r} twice")
        seen.add(i)


def _check_group_settings(tasks: Sequence[Task]) -> None:
    first: Dict[str, Task] = {}
    for task in tasks:
        other = first.setdefault(task.group, task)
        for name in ("weight", "max_slots", "priority"):
            a, b = getattr(other, name), getattr(task, name)
            if a != b:
                raise ValueError(
                    f"Expected every task of group {task.group!r} to have the same {name}. "
                    f"Received: {other.id!r} has {name}={a!r}, {task.id!r} has {name}={b!r}"
                )


def _check_running(
    agents: Mapping[str, Agent], running: Mapping[str, Tuple[Task, Allocation]]
) -> List[Tuple[Task, Allocation]]:
    entries: List[Tuple[Task, Allocation]] = []
    owner: Dict[Tuple[str, int], str] = {}
    for key, entry in running.items():
        try:
            task, allocation = entry
        except (TypeError, ValueError):
            raise ValueError(f"Expected running[{key!r}] to be (Task, Allocation). Received: {entry!r}") from None
        if not isinstance(task, Task) or not isinstance(allocation, Allocation):
            raise ValueError(f"Expected running[{key!r}] to be (Task, Allocation). Received: {entry!r}")
        if not key == task.id == allocation.task_id:
            raise ValueError(
                f"Expected running keys to match task and allocation ids. Received: key={key!r}, "
                f"task.id={task.id!r}, allocation.task_id={allocation.task_id!r}"
            )
        if allocation.slot_count != task.slots_needed:
            raise ValueError(
                f"Expected the allocation of running task {key!r} to hold slots_needed="
                f"{task.slots_needed} slots. Received: {allocation.slot_count} slots"
            )
        for agent_id, slots in allocation.parts:
            agent = agents.get(agent_id)
            for slot in slots:
                if agent is not None and slot >= agent.slots:
                    raise ValueError(
                        f"Expected running task {key!r} to use slots of agent {agent_id!r} in "
                        f"[0, {agent.slots}). Received: slot {slot}"
                    )
                holder = owner.setdefault((agent_id, slot), key)
                if holder != key:
                    raise ValueError(
                        f"Expected running tasks to hold disjoint slots. Received: slot {slot} of "
                        f"agent {agent_id!r} held by {holder!r} and {key!r}"
                    )
        entries.append((task, allocation))
    return entries


def build_state(
    agents: Sequence[Agent], pending: Sequence[Task], running: Mapping[str, Tuple[Task, Allocation]]
) -> State:
    """Validate the inputs of ``schedule`` and index them (see the module docstring).

    Raises:
        ValueError: on duplicate ids, a task both pending and running, group settings
            that differ between tasks, or running allocations that overlap, do not
            match ``slots_needed`` or name slots an agent does not have.
    """
    for agent in agents:
        if not isinstance(agent, Agent):
            raise ValueError(f"Expected agents to be Agent instances. Received: {agent!r}")
    for task in pending:
        if not isinstance(task, Task):
            raise ValueError(f"Expected pending to hold Task instances. Received: {task!r}")
    if not isinstance(running, Mapping):
        raise ValueError(f"Expected running to be a mapping of task id to (Task, Allocation). Received: {running!r}")
    _check_unique("agent", [a.id for a in agents])
    by_id = {a.id: a for a in agents}
    entries = _check_running(by_id, running)
    _check_unique("task", [t.id for t in pending] + [t.id for t, _ in entries])
    _check_group_settings(list(pending) + [t for t, _ in entries])

    pool = SlotPool(agents)
    groups: Dict[str, Group] = {}

    def group_of(task: Task) -> Group:
        group = groups.get(task.group)
        if group is None:
            group = groups[task.group] = Group(task.group, float(task.weight), task.max_slots, (task.arrival, task.group))
        elif task.arrival < group.rank[0]:
            group.rank = (task.arrival, task.group)
        return group

    running_tasks: List[RunningTask] = []
    for order, (task, allocation) in enumerate(entries):
        pool_parts: List[Part] = []
        for agent_id, slots in allocation.parts:
            usable = tuple(s for s in slots if pool.is_usable(agent_id, s))
            if usable:
                pool_parts.append((agent_id, usable))
        in_pool = sum(len(s) for _, s in pool_parts)
        info = RunningTask(task, allocation, order, tuple(pool_parts), in_pool, task.slots_needed - in_pool)
        pool.take(info.pool_parts)
        running_tasks.append(info)
        group = group_of(task)
        group.running.append(info)
        group.labels.add(task.agent_label)
        group.in_pool += info.in_pool
        group.outside += info.outside
        if info.locked:
            group.locked += info.in_pool

    for task in sorted(pending, key=lambda t: (t.arrival, t.id)):
        group = group_of(task)
        if pool.can_ever_fit(task):
            group.queue.append(task)
            group.labels.add(task.agent_label)
    return State(pool, groups, running_tasks)
