"""Why a pending task waits, from the scheduler's view of the cluster (pure).

``waiting_reasons(agents, pending, running, decision)`` returns a :class:`Wait` for
every pending task the decision does not start: a short ``reason`` for table columns,
a ``detail`` sentence for describe views and the master log, and ``impossible`` when
the task cannot start until the cluster itself changes (agents join or are enabled),
as opposed to waiting for slots other tasks hold.

    >>> from determined.master.scheduler import Agent, Task
    >>> waits = waiting_reasons([Agent("a", 2)], [Task("t", "exp-1", 4, arrival=0)], {})
    >>> waits["t"].reason, waits["t"].impossible
    ('needs 4 slots, cluster has 2', True)
"""

from __future__ import annotations

import dataclasses
from typing import Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from determined.master.scheduler._types import Agent, Allocation, Decision, SchedulerPolicy, Task

__all__ = ["Wait", "group_title", "waiting_reasons"]


@dataclasses.dataclass(frozen=True)
class Wait:
    """Why one task waits.

    Args:
        reason: a few words for an 80-column table.
        detail: one or two sentences for describe views and the master log.
        impossible: no slot another task frees can start it; the cluster must change.
    """

    reason: str
    detail: str
    impossible: bool = False

    def as_json(self) -> Dict[str, object]:
        return {"reason": self.reason, "detail": self.detail, "impossible": self.impossible}


def group_title(group: str) -> str:
    """A group as users name it: ``exp-3`` -> ``experiment 3``, ``task-ab12`` -> ``task ab12``."""
    for prefix, title in (("exp-", "experiment"), ("task-", "task")):
        if group.startswith(prefix):
            return f"{title} {group[len(prefix):]}"
    return group


def _slots(n: int) -> str:
    return f"{n} slot" if n == 1 else f"{n} slots"


def waiting_reasons(
    agents: Sequence[Agent],
    pending: Sequence[Task],
    running: Mapping[str, Tuple[Task, Allocation]],
    decision: Optional[Decision] = None,
    policy: Optional[SchedulerPolicy] = None,
    *,
    one_agent: Collection[str] = (),
    span_groups: Optional[Sequence[Collection[str]]] = None,
) -> Dict[str, Wait]:
    """A :class:`Wait` per pending task that ``decision`` does not start.

    Args:
        agents, pending, running: what :func:`~determined.master.scheduler.schedule` got.
        decision: this pass's decision; its starts take their slots, except spans the
            master refuses (``one_agent`` tasks, agents not in one of ``span_groups``).
        policy: the scheduler's policy (named in the reason a task waits its turn).
        one_agent: ids of tasks that must run on a single agent (commands, notebooks).
        span_groups: sets of agent ids one task may span (trials span agents of one
            manager; the embedded agent joins none); None: all agents together.
    """
    policy = policy or SchedulerPolicy()
    started = {a.task_id: a for a in (decision.start if decision else [])
               if _can_run(a, one_agent, span_groups)}
    used: Dict[str, int] = {}
    for alloc in [a for _, a in running.values()] + list(started.values()):
        for agent_id, slots in alloc.parts:
            used[agent_id] = used.get(agent_id, 0) + len(slots)
    holders: Dict[str, int] = {}  # group -> slots its running tasks hold
    for task, alloc in running.values():
        holders[task.group] = holders.get(task.group, 0) + alloc.slot_count
    settings = {t.group: t for t, _ in running.values()}
    out: Dict[str, Wait] = {}
    for task in pending:
        if task.id in started:
            continue
        out[task.id] = _why(task, agents, used, holders, settings, policy,
                            task.id in one_agent, span_groups)
    return out


def _can_run(alloc: Allocation, one_agent: Collection[str],
             span_groups: Optional[Sequence[Collection[str]]]) -> bool:
    """Whether the master carries out a start (it refuses spans it cannot launch)."""
    if len(alloc.parts) == 1:
        return True
    if alloc.task_id in one_agent:
        return False
    return span_groups is None or any(set(alloc.agent_ids) <= set(g) for g in span_groups)


def _why(task: Task, agents: Sequence[Agent], used: Mapping[str, int],
         holders: Mapping[str, int],
         settings: Mapping[str, Task], policy: SchedulerPolicy, one_agent: bool,
         span_groups: Optional[Sequence[Collection[str]]]) -> Wait:
    need = task.slots_needed
    label = task.agent_label
    wants = f"needs {_slots(need)}"
    it = "the trial" if task.group.startswith("exp-") else "the task"
    if not agents:
        return Wait("no agent connected",
                    f"No agent is connected; {it} {wants} and waits for an agent to join.",
                    True)
    if not any(a.enabled for a in agents):
        return Wait("all agents disabled",
                    f"All {len(agents)} agent(s) are disabled; {it} {wants} and waits for "
                    "one to be enabled (det agent enable).", True)
    labeled = [a for a in agents if not label or a.label == label]
    eligible = [a for a in labeled if a.usable_slots]
    if label and not eligible:
        what = "is disabled" if labeled else "is connected"
        return Wait(f"no agent labeled {label}",
                    f"{it.capitalize()} {wants} on an agent labeled {label!r}; no such agent {what}.",
                    True)
    sizes = {a.id: len(a.usable_slots) for a in eligible}
    largest = max(sizes.values(), default=0)
    disabled = sum(a.slots for a in labeled) - sum(sizes.values())
    note = f" ({_slots(disabled)} disabled)" if disabled else ""
    groups: List[List[str]] = []
    if one_agent:
        bound, short, where = largest, f"largest agent has {largest}", "one agent"
    else:
        groups = [list(sizes)] if span_groups is None else [
            [a for a in g if a in sizes] for g in span_groups]
        spanned = max((sum(sizes[a] for a in g) for g in groups), default=0)
        bound = max(largest, spanned)
        short, where = f"cluster has {bound}", "the agents it may use together"
    if need > bound:
        until = ("slots are enabled (det slot enable) or agents with more slots join"
                 if disabled else "agents with more slots join")
        return Wait(f"{wants}, {short}",
                    f"{it.capitalize()} {wants} on {where}; at most {bound} usable slot(s) are there"
                    f"{note}. It waits until {until}.", True)
    if task.max_slots is not None and need > task.max_slots:
        return Wait(f"{wants}, max_slots is {task.max_slots}",
                    f"{it.capitalize()} {wants} but its experiment's max_slots is {task.max_slots}.",
                    True)
    held = holders.get(task.group, 0)
    if task.max_slots is not None and held + need > task.max_slots:
        return Wait(f"max_slots reached ({held}/{task.max_slots})",
                    f"{group_title(task.group).capitalize()} holds {_slots(held)} of its "
                    f"max_slots {task.max_slots}; {it} {wants} and waits for its own "
                    "trials to give some back.")
    free = {a: max(0, n - used.get(a, 0)) for a, n in sizes.items()}
    best = max(free.values(), default=0)
    spans = not one_agent and need > largest
    avail = max((sum(free[a] for a in g) for g in groups), default=0) if spans else best
    if avail >= need:
        order = ("priority, then arrival" if policy.type == "priority"
                 else "fair share across experiments")
        return Wait("waiting its turn",
                    f"{it.capitalize()} {wants} and enough are free, but others come first "
                    f"({policy.type} scheduler: {order}).")
    others = sorted(((g, n) for g, n in holders.items() if g != task.group and n),
                    key=lambda gn: (-gn[1], gn[0]))
    listed = ", ".join(f"{group_title(g)} ({_slots(n)}{_rank(settings[g], policy)})"
                       for g, n in others[:4])
    if len(others) > 4:
        listed += f" and {len(others) - 4} more"
    missing = need - avail
    short = f"waiting for {_slots(missing)} in use"
    held_by = f"; held by {listed}" if listed else ""
    place = "" if spans else " on one agent"
    free_now = f"{avail} free" if avail else "none free"
    return Wait(short, f"{it.capitalize()} {wants}{place}; {free_now}{held_by}.")


def _rank(task: Task, policy: SchedulerPolicy) -> str:
    if policy.type == "priority":
        return f", priority {task.effective_priority}"
    return f", weight {task.weight:g}"
