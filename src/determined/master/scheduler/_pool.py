"""Free slots per agent, and where a task fits (best or worst fit, labels, spanning).

A task fits on one agent when some eligible agent has at least ``slots_needed``
usable slots in total; it then waits for such an agent to have that many free
slots. Only when no eligible agent is that large may a task span agents, taking
free slots from the agents with the most free slots first:

    >>> pool = SlotPool([Agent("a", 4), Agent("b", 2)])
    >>> pool.find(Task("t", "g", slots_needed=2, arrival=0), fit="best")
    (('b', (0, 1)),)
    >>> pool.find(Task("t", "g", slots_needed=2, arrival=0), fit="worst")
    (('a', (0, 1)),)
    >>> pool.find(Task("t", "g", slots_needed=5, arrival=0), fit="best")
    (('a', (0, 1, 2, 3)), ('b', (0,)))
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from determined.master.scheduler._types import Agent, Part, Task

__all__ = ["SlotPool"]

Parts = Tuple[Part, ...]


class SlotPool:
    """The usable slots of a set of agents and which of them are free.

    Usable means: the agent is enabled and the slot is not disabled. All slots start
    free; :meth:`take` and :meth:`give` move slots in and out. Agents keep the order
    they were given in, which breaks ties between equally good agents.
    """

    def __init__(self, agents: Sequence[Agent]) -> None:
        self._labels: Dict[str, str] = {a.id: a.label for a in agents}
        self._usable: Dict[str, FrozenSet[int]] = {a.id: frozenset(a.usable_slots) for a in agents}
        self._order: Tuple[str, ...] = tuple(a.id for a in agents if self._usable[a.id])
        self._free: Dict[str, Set[int]] = {agent_id: set(self._usable[agent_id]) for agent_id in self._order}
        self._eligible: Dict[str, Tuple[str, ...]] = {}
        self._limits: Dict[str, Tuple[int, int]] = {}

    @property
    def capacity(self) -> int:
        """Number of usable slots."""
        return sum(len(self._usable[agent_id]) for agent_id in self._order)

    def is_usable(self, agent_id: str, slot: int) -> bool:
        """Whether ``slot`` of ``agent_id`` may receive tasks (unknown agents: no)."""
        return slot in self._usable.get(agent_id, ())

    def eligible(self, label: str) -> Tuple[str, ...]:
        """Agents with usable slots that a task with ``agent_label=label`` may use."""
        if label not in self._eligible:
            self._eligible[label] = tuple(a for a in self._order if not label or self._labels[a] == label)
        return self._eligible[label]

    def accessible(self, label: str) -> int:
        """Usable slots a task with ``agent_label=label`` may ever use."""
        return self._limits_for(label)[1]

    def can_ever_fit(self, task: Task) -> bool:
        """Whether the task fits once every slot is free."""
        return task.slots_needed <= self._limits_for(task.agent_label)[1]

    def _limits_for(self, label: str) -> Tuple[int, int]:
        if label not in self._limits:
            sizes = [len(self._usable[a]) for a in self.eligible(label)]
            self._limits[label] = (max(sizes, default=0), sum(sizes))
        return self._limits[label]

    def spans(self, task: Task) -> bool:
        """Whether the task must span agents (no eligible agent is large enough)."""
        return task.slots_needed > self._limits_for(task.agent_label)[0]

    def find(self, task: Task, fit: str) -> Optional[Parts]:
        """Where the task would go now, or ``None`` if it does not fit; takes nothing.

        Args:
            task: The task to place.
            fit: ``"best"`` (fewest free slots that fit) or ``"worst"`` (most free slots).
        """
        need = task.slots_needed
        eligible = self.eligible(task.agent_label)
        if not self.spans(task):
            best: Optional[str] = None
            best_free = 0
            for agent_id in eligible:
                free = len(self._free[agent_id])
                if free < need:
                    continue
                if best is None or (free < best_free if fit == "best" else free > best_free):
                    best, best_free = agent_id, free
            if best is None:
                return None
            return ((best, tuple(sorted(self._free[best])[:need])),)
        if sum(len(self._free[a]) for a in eligible) < need:
            return None
        by_free = sorted(eligible, key=lambda a: -len(self._free[a]))  # stable: agent order breaks ties
        parts: List[Part] = []
        for agent_id in by_free:
            take = min(need, len(self._free[agent_id]))
            if take:
                parts.append((agent_id, tuple(sorted(self._free[agent_id])[:take])))
                need -= take
            if not need:
                break
        return tuple(parts)

    def size(self, agent_id: str) -> int:
        """Usable slots of an agent (0 for unknown or disabled agents)."""
        return len(self._usable.get(agent_id, ()))

    def free_count(self, agent_id: str) -> int:
        """Free usable slots of an agent (0 for unknown or disabled agents)."""
        return len(self._free.get(agent_id, ()))

    def place_on(self, agent_id: str, need: int) -> Parts:
        """The ``need`` lowest free slots of one agent (which must have that many)."""
        slots = sorted(self._free[agent_id])[:need]
        if len(slots) < need:
            raise ValueError(
                f"Expected agent {agent_id!r} to have {need} free slots. Received: {len(slots)} free"
            )
        return ((agent_id, tuple(slots)),)

    def is_free(self, parts: Iterable[Part]) -> bool:
        """Whether every slot of ``parts`` is usable and free."""
        return all(set(slots) <= self._free.get(agent_id, set()) for agent_id, slots in parts)

    def take(self, parts: Iterable[Part]) -> None:
        """Mark usable slots as used; slots that are not usable are ignored."""
        for agent_id, slots in parts:
            free = self._free.get(agent_id)
            if free is not None:
                free.difference_update(slots)

    def give(self, parts: Iterable[Part]) -> None:
        """Mark usable slots as free again; slots that are not usable are ignored."""
        for agent_id, slots in parts:
            if agent_id in self._free:
                usable = self._usable[agent_id]
                self._free[agent_id].update(s for s in slots if s in usable)
