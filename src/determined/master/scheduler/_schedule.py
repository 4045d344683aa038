"""The scheduler's entry point: ``schedule(agents, pending, running, policy) -> Decision``.

    >>> from determined.master.scheduler import Agent, Task
    >>> d = schedule([Agent("a", 2)], [Task("t1", "exp-1", 2, arrival=0)], {})
    >>> d.start
    [Allocation(task_id='t1', parts=(('a', (0, 1)),))]
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence, Tuple

from determined.master.scheduler._fair_share import schedule_fair_share
from determined.master.scheduler._priority import schedule_priority
from determined.master.scheduler._state import build_state
from determined.master.scheduler._types import Agent, Allocation, Decision, SchedulerPolicy, Task

__all__ = ["schedule"]


def schedule(
    agents: Sequence[Agent],
    pending: Sequence[Task],
    running: Mapping[str, Tuple[Task, Allocation]],
    policy: Optional[SchedulerPolicy] = None,
) -> Decision:
    """Decide which pending tasks start where, and which running tasks to preempt.

    A pure function: it reads its arguments, changes none of them and keeps no state,
    so the master calls it after every event (task added, started, stopped; agent
    added, removed, enabled, disabled; weight or ``max_slots`` edited) and applies the
    decision. Calling it again before anything changed returns the same decision.

    Args:
        agents: Every agent; disabled agents and slots receive no new tasks.
        pending: Tasks waiting for slots. Tasks that can never fit (more slots than
            all usable agents with a matching label have) are left waiting and do not
            hold up others.
        running: ``{task_id: (task, allocation)}`` for every task holding slots,
            **in start order** (oldest first; a dict keeps insertion order), including
            tasks already asked to stop. Tasks on disabled or unknown agents, and tasks
            that are not preemptible, are never preempted.
        policy: ``SchedulerPolicy()`` (fair share, best fit) when omitted.

    Returns:
        A :class:`Decision`. Started tasks get exactly ``slots_needed`` free usable
        slots, on agents their label allows; no slot is given twice. Preempted tasks
        should be paused gracefully; their slots are handed out by a later call.

    Raises:
        ValueError: if an argument is malformed (duplicate ids, a task both pending
            and running, different settings within one group, overlapping running
            allocations, an unknown policy).

    Example:
        >>> from determined.master.scheduler import Agent, Task
        >>> pending = [Task(f"{g}{i}", g, 1, arrival=i, weight=3.0 if g == "a" else 1.0)
        ...            for g in "ab" for i in range(8)]
        >>> d = schedule([Agent("n1", 4), Agent("n2", 4)], pending, {})
        >>> sorted(a.task_id for a in d.start)
        ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'b0', 'b1']
    """
    if policy is None:
        policy = SchedulerPolicy()
    elif not isinstance(policy, SchedulerPolicy):
        raise ValueError(f"Expected policy to be a SchedulerPolicy. Received: policy={policy!r}")
    state = build_state(agents, pending, running)
    if policy.type == "priority":
        return schedule_priority(state, policy.fit)
    return schedule_fair_share(state, policy.fit)
