"""The ``priority`` policy: first come, first served by (priority, arrival).

Pending tasks are taken in order of (priority ascending, ``None`` = 42; arrival; id).
Each starts if it fits. The first that does not fit blocks every later one (strict
FIFO: a large task is not starved by small ones behind it); it and the tasks after it
may instead preempt running tasks of strictly lower priority (larger number), the
lowest priority and most recently started first, when that makes them fit; the
first one that cannot get room that way ends the pass. A task whose group is at
``max_slots`` is skipped without blocking others. Tasks that can never fit are
never considered.

    >>> from determined.master.scheduler import Agent, Allocation, Task
    >>> from determined.master.scheduler._state import build_state
    >>> low = Task("low", "batch", 1, arrival=0, priority=50)
    >>> running = {"low": (low, Allocation("low", [("a", [0])]))}
    >>> urgent = Task("urgent", "urgent", 1, arrival=1, priority=1)
    >>> d = schedule_priority(build_state([Agent("a", 1)], [urgent], running), "best")
    >>> d.start, d.preempt
    ([], ['low'])
"""

from __future__ import annotations

from typing import Dict, List, Set

from determined.master.scheduler._preempt import make_room
from determined.master.scheduler._state import RunningTask, State
from determined.master.scheduler._types import Allocation, Decision, Task

__all__ = ["schedule_priority"]


def schedule_priority(state: State, fit: str) -> Decision:
    """One priority scheduling pass over ``state`` (consumed: its pool changes)."""
    pool, groups = state.pool, state.groups
    queue: List[Task] = sorted(
        (t for g in groups.values() for t in g.queue),
        key=lambda t: (t.effective_priority, t.arrival, t.id),
    )
    held: Dict[str, int] = {name: g.held for name, g in groups.items()}
    candidates = sorted(
        (r for r in state.running if not r.locked and r.in_pool),
        key=lambda r: (-r.task.effective_priority, -r.order),
    )
    chosen: Set[str] = set()
    starts: List[Allocation] = []
    victims: List[RunningTask] = []
    blocked = False
    for task in queue:
        group = groups[task.group]
        if group.max_slots is not None and held[task.group] + task.slots_needed > group.max_slots:
            continue
        if not blocked:
            parts = pool.find(task, fit)
            if parts is not None:
                pool.take(parts)
                starts.append(Allocation(task.id, parts))
                held[task.group] += task.slots_needed
                continue
            blocked = True
        # From here on ``pool`` is the future view: free once the victims have stopped.
        priority = task.effective_priority
        allowed = [c for c in candidates if c.task.id not in chosen and c.task.effective_priority > priority]
        room = make_room(pool, task, fit, allowed)
        if room is None:
            break
        for victim in room.victims:
            chosen.add(victim.task.id)
            held[victim.task.group] -= victim.task.slots_needed
        victims.extend(room.victims)
        held[task.group] += task.slots_needed
    return Decision(start=starts, preempt=[v.task.id for v in victims])
