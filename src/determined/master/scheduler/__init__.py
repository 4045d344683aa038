"""Scheduling trials onto slots: a pure function of agents and demand (SPEC 1.7).

Contract: ``schedule(agents, pending, running, policy) -> Decision`` reads the cluster
as it is (agents and their slots, tasks waiting, tasks running in start order) and
returns which pending tasks start on which slots and which running tasks to preempt.
No I/O, threads or clocks; the master calls it after every event and applies the
result. A task (one trial) gets all its ``slots_needed`` slots or none, on one agent
unless no eligible agent is large enough. ``fit="best"`` packs, ``"worst"`` spreads.

Fairness (``fair_share``, the default): each group (experiment) is entitled to its
weighted max-min share of the usable slots -- shares grow in proportion to
``weight`` until a group's demand (held + pending slots, capped by ``max_slots``) is
met, and what it does not need goes to the others. Groups above their share lose
their most recently started tasks, but only when that lets a group below its share
start a task. ``priority`` runs tasks first come, first served by (priority, arrival)
and lets a task preempt lower-priority ones when that makes it fit.

``waiting_reasons(agents, pending, running, decision)`` says why each task the
decision leaves waiting waits (no agent, too large, slots held by others, ...).

    >>> from determined.master.scheduler import Agent, Task, schedule
    >>> pending = [Task(f"{g}{i}", g, 1, arrival=i, weight=3.0 if g == "a" else 1.0)
    ...            for g in "ab" for i in range(8)]
    >>> d = schedule([Agent("n1", 8)], pending, {})
    >>> sorted(a.task_id[0] for a in d.start)   # weights 3:1 on 8 slots: 6 + 2
    ['a', 'a', 'a', 'a', 'a', 'a', 'b', 'b']
"""

from determined.master.scheduler._schedule import schedule
from determined.master.scheduler._task_ids import trial_of_task, trial_task_id
from determined.master.scheduler._waiting import Wait, group_title, waiting_reasons
from determined.master.scheduler._types import (
    DEFAULT_PRIORITY,
    Agent,
    Allocation,
    Assignment,
    Decision,
    SchedulerPolicy,
    Task,
)

__all__ = [
    "DEFAULT_PRIORITY",
    "Agent",
    "Allocation",
    "Assignment",
    "Decision",
    "SchedulerPolicy",
    "Task",
    "Wait",
    "group_title",
    "schedule",
    "trial_of_task",
    "trial_task_id",
    "waiting_reasons",
]
