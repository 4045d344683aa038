"""Choosing which running tasks to preempt so that one pending task fits.

``make_room`` works on a *future* :class:`SlotPool`: the free slots once the tasks
chosen so far have stopped, minus slots already promised to other waiting tasks.
Candidates come in the caller's order, most preferred victim first.

- A task that must fit on one agent: for every eligible agent large enough, take
  the candidates on that agent in order until the task fits there, then drop those
  the fit does not need (least preferred first). The agent needing the fewest
  victim slots wins; ties go to the agent whose victims are the most preferred,
  then to the fit rule.
- A task that spans agents: the same over all eligible agents at once.

It never preempts a task that does not help, and preempts nothing at all when even
every candidate would not make the task fit:

    >>> from determined.master.scheduler import Agent, Allocation
    >>> pool = SlotPool([Agent("a", 1)])
    >>> victim = RunningTask(Task("old", "g", 1, arrival=0), Allocation("old", [("a", [0])]),
    ...                      order=0, pool_parts=(("a", (0,)),), in_pool=1, outside=0)
    >>> pool.take(victim.pool_parts)
    >>> room = make_room(pool, Task("new", "h", 1, arrival=1), "best", [victim])
    >>> room.parts, [v.task.id for v in room.victims]
    ((('a', (0,)),), ['old'])
"""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional, Sequence, Tuple

from determined.master.scheduler._pool import SlotPool
from determined.master.scheduler._state import RunningTask
from determined.master.scheduler._types import Part, Task

__all__ = ["Room", "make_room"]


@dataclasses.dataclass
class Room:
    """Where a task will go (``parts``) once ``victims`` have stopped."""

    parts: Tuple[Part, ...]
    victims: List[RunningTask]


def _collect(
    pool: SlotPool, candidates: Sequence[RunningTask], fits: Callable[[], bool]
) -> Optional[List[RunningTask]]:
    """Give back candidates' slots in order until ``fits()``, then drop unneeded ones.

    On success the victims' slots stay given back to ``pool``; on failure ``pool`` is
    unchanged and ``None`` is returned.
    """
    taken: List[RunningTask] = []
    for candidate in candidates:
        if fits():
            break
        pool.give(candidate.pool_parts)
        taken.append(candidate)
    if not fits():
        for candidate in taken:
            pool.take(candidate.pool_parts)
        return None
    for candidate in reversed(taken):
        pool.take(candidate.pool_parts)
        if fits():
            taken.remove(candidate)
        else:
            pool.give(candidate.pool_parts)
    return taken


def make_room(pool: SlotPool, task: Task, fit: str, candidates: Sequence[RunningTask]) -> Optional[Room]:
    """Pick victims among ``candidates`` so ``task`` fits in ``pool``; reserve its slots.

    Args:
        pool: The future free slots; on success the victims' slots are added and the
            task's slots removed, on failure it is left unchanged.
        task: The pending task that should fit.
        fit: ``"best"`` or ``"worst"``.
        candidates: Running tasks that may be preempted, most preferred victim first.

    Returns:
        The task's future slots and the victims (in candidate order), or ``None``.
    """
    parts = pool.find(task, fit)
    if parts is not None:
        pool.take(parts)
        return Room(parts, [])
    need = task.slots_needed
    eligible = pool.eligible(task.agent_label)
    if pool.spans(task):
        allowed = set(eligible)
        useful = [c for c in candidates if any(a in allowed for a, _ in c.pool_parts)]
        victims = _collect(pool, useful, lambda: pool.find(task, fit) is not None)
        if victims is None:
            return None
        parts = pool.find(task, fit)
        assert parts is not None
        pool.take(parts)
        return Room(parts, victims)

    rank = {id(c): i for i, c in enumerate(candidates)}
    best: Optional[Tuple[Tuple[int, int, int, int], str, List[RunningTask]]] = None
    for order, agent_id in enumerate(eligible):
        if pool.size(agent_id) < need:
            continue
        free_now = pool.free_count(agent_id)
        on_agent = [c for c in candidates if any(a == agent_id for a, _ in c.pool_parts)]
        victims = _collect(pool, on_agent, lambda: pool.free_count(agent_id) >= need)
        if victims is None:
            continue
        for victim in victims:
            pool.take(victim.pool_parts)
        score = (
            sum(v.in_pool for v in victims),
            max((rank[id(v)] for v in victims), default=-1),
            free_now if fit == "best" else -free_now,
            order,
        )
        if best is None or score < best[0]:
            best = (score, agent_id, victims)
    if best is None:
        return None
    _, agent_id, victims = best
    for victim in victims:
        pool.give(victim.pool_parts)
    parts = pool.place_on(agent_id, need)
    pool.take(parts)
    return Room(parts, sorted(victims, key=lambda v: rank[id(v)]))
