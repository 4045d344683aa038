"""The ``fair_share`` policy: weighted max-min shares across groups (experiments).

Each group's *target* is its whole-slot weighted max-min share of the usable slots
(:func:`integer_shares`), with demand = slots held + slots its pending tasks need,
capped by ``max_slots`` and by the slots its labels can reach; slots held by tasks
the scheduler may not preempt are granted first. One call then:

1. starts tasks of groups below target, most under-served group first
   (held / weight), each group in arrival order, never past its target;
2. for a group whose next task fits its target but not the free slots, preempts
   *excess* tasks, but only when that makes the task fit (the slots are promised to
   it and handed out by a later call, once the preempted tasks have stopped). A
   group's excess is its newest preemptible tasks: walking back from its most
   recently started task, a task is excess while the group still holds more than
   its target. Excess tasks are taken newest first, and only those the fit needs;
3. if nothing was preempted, gives the slots still free to any group with a task that
   fits (most under-served first, within ``max_slots``), so no slot idles; a group
   that got extra slots this way is above target and the first to give them back.
   A non-preemptible task gets no extra slots while its group holds preemptible
   ones: it could not give them back, so its group's older tasks would become the
   excess and be preempted by the next call instead.

Rounding to whole slots favours the earlier group; a group whose next task needs
more slots than its target gets slots only through step 3.

    >>> from determined.master.scheduler import Agent, Task
    >>> from determined.master.scheduler._state import build_state
    >>> agents = [Agent("a", 8)]
    >>> pending = [Task(f"{g}{i}", g, 1, arrival=i) for g in "xy" for i in range(8)]
    >>> d = schedule_fair_share(build_state(agents, pending, {}), "best")
    >>> sorted(a.task_id for a in d.start)
    ['x0', 'x1', 'x2', 'x3', 'y0', 'y1', 'y2', 'y3']
"""

from __future__ import annotations

import copy
import heapq
from typing import Dict, List, Optional, Tuple

from determined.master.scheduler._max_min import integer_shares
from determined.master.scheduler._preempt import make_room
from determined.master.scheduler._state import Group, RunningTask, State
from determined.master.scheduler._types import Allocation, Decision, Part, Task

__all__ = ["fair_share_targets", "schedule_fair_share"]

# Heap entries: (slots held / weight, group rank); the rank ends with the group name.
_Entry = Tuple[float, Tuple[int, str]]


def fair_share_targets(state: State) -> Dict[str, int]:
    """Each group's target number of usable slots (see the module docstring)."""
    groups = sorted(state.groups.values(), key=lambda g: g.rank)
    capacity = state.pool.capacity
    demands: List[int] = []
    for group in groups:
        demand = group.in_pool + sum(t.slots_needed for t in group.queue)
        if group.max_slots is not None:
            demand = min(demand, max(group.max_slots - group.outside, 0))
        if "" not in group.labels:
            demand = min(demand, sum(state.pool.accessible(label) for label in group.labels))
        demands.append(max(demand, group.locked))
    shares = integer_shares(capacity, [g.weight for g in groups], [g.locked for g in groups], demands)
    return {g.name: share for g, share in zip(groups, shares)}


def _entry(group: Group, held: Dict[str, int]) -> _Entry:
    return (held[group.name] / group.weight, group.rank)


def schedule_fair_share(state: State, fit: str) -> Decision:
    """Fair-share scheduling over ``state`` (consumed: its pool and queues change).

    A non-preemptible task that starts becomes a floor of its group's share in the
    next call, which can move every group's target (and so preempt a task this call
    just started). So the non-preemptible tasks a pass starts are committed (taken
    as running, their slots as floors) and the pass is made again for the rest,
    until a pass starts no new one; the decision starts the committed tasks and does
    what that last pass decided, which the next call sees as settled.
    """
    if not any(not t.preemptible for g in state.groups.values() for t in g.queue):
        return _schedule_pass(state, fit)
    committed: List[Allocation] = []
    hints: Dict[str, Tuple[Part, ...]] = {}
    while True:
        attempt = copy.deepcopy(state)
        decision = _schedule_pass(attempt, fit, hints)
        # A redone pass places a task where the pass before did if it can: placing the
        # rest anew around the committed tasks could leave a larger, older task no room.
        hints.update((a.task_id, tuple(a.parts)) for a in decision.start)
        tasks = {t.id: t for g in state.groups.values() for t in g.queue}
        new = [a for a in decision.start if not tasks[a.task_id].preemptible]
        if not new:
            break
        for allocation in new:
            _commit(state, tasks[allocation.task_id], allocation)
        committed.extend(new)
    state.pool, state.groups, state.running = attempt.pool, attempt.groups, attempt.running
    return Decision(start=committed + list(decision.start), preempt=list(decision.preempt))


def _commit(state: State, task: Task, allocation: Allocation) -> None:
    """Take ``task`` (pending, not preemptible) as running on ``allocation``."""
    group = state.groups[task.group]
    group.queue.remove(task)
    state.pool.take(allocation.parts)
    info = RunningTask(task, allocation, len(state.running), tuple(allocation.parts),
                       task.slots_needed, 0)
    state.running.append(info)
    group.running.append(info)
    group.in_pool += task.slots_needed
    group.locked += task.slots_needed


def _schedule_pass(state: State, fit: str,
                   hints: Optional[Dict[str, Tuple[Part, ...]]] = None) -> Decision:
    """One pass of steps 1-3 (see the module docstring); ``hints``: where to place a task
    whose slots there are still free (a redone pass's)."""
    pool, groups = state.pool, state.groups

    def place(task: Task) -> Optional[Tuple[Part, ...]]:
        hint = hints.get(task.id) if hints else None
        return hint if hint is not None and pool.is_free(hint) else pool.find(task, fit)

    target = fair_share_targets(state)
    # Groups holding slots they could give back (see step 3).
    yielding = {g.name for g in groups.values() if any(not r.locked and r.in_pool for r in g.running)}
    held = {name: g.in_pool for name, g in groups.items()}
    starts: List[Allocation] = []

    def start(group: Group, task: Task, parts: Tuple[Part, ...]) -> None:
        pool.take(parts)
        starts.append(Allocation(task.id, parts))
        held[group.name] += task.slots_needed
        group.queue.popleft()
        if task.preemptible:
            yielding.add(group.name)

    # 1. Start tasks within target.
    blocked: List[Group] = []
    heap: List[_Entry] = [_entry(g, held) for g in groups.values() if g.queue]
    heapq.heapify(heap)
    while heap:
        group = groups[heapq.heappop(heap)[1][1]]
        task = group.queue[0]
        if held[group.name] + task.slots_needed > target[group.name]:
            continue
        parts = place(task)
        if parts is None:
            blocked.append(group)
            continue
        start(group, task, parts)
        if group.queue:
            heapq.heappush(heap, _entry(group, held))

    # 2. Preempt over-target groups for blocked groups (pool becomes the future view).
    victims = _preempt_for(state, blocked, target, held, fit)
    if victims:
        return Decision(start=starts, preempt=[v.task.id for v in victims])

    # 3. Hand out whatever is still free.
    stuck = {g.name for g in blocked}
    heap = [_entry(g, held) for g in groups.values() if g.queue and g.name not in stuck]
    heapq.heapify(heap)
    while heap:
        group = groups[heapq.heappop(heap)[1][1]]
        task = group.queue[0]
        if group.max_slots is not None and held[group.name] + group.outside + task.slots_needed > group.max_slots:
            continue
        if not task.preemptible and group.name in yielding:
            # Above target, a task that cannot give its slots back would make the
            # group's older preemptible tasks its excess in the next call, which
            # could then preempt them for a room this call could not make.
            continue
        parts = place(task)
        if parts is None:
            continue
        start(group, task, parts)
        if group.queue:
            heapq.heappush(heap, _entry(group, held))
    return Decision(start=starts, preempt=[])


def _excess(state: State, target: Dict[str, int], held: Dict[str, int]) -> List[RunningTask]:
    """Preemption candidates: each group's most recently started tasks beyond its target.

    Walking a group's preemptible tasks from the newest, a task is excess while the
    group still holds more than its target before giving it up. Returned newest first.
    """
    excess: List[RunningTask] = []
    for group in state.groups.values():
        left = held[group.name]
        for task in sorted(group.running, key=lambda r: -r.order):
            if left <= target[group.name]:
                break
            if not task.locked and task.in_pool:
                excess.append(task)
                left -= task.in_pool
    excess.sort(key=lambda r: -r.order)
    return excess


def _preempt_for(
    state: State, blocked: List[Group], target: Dict[str, int], held: Dict[str, int], fit: str
) -> List[RunningTask]:
    pool, groups = state.pool, state.groups
    candidates = _excess(state, target, held)
    if not candidates:
        return []
    future = dict(held)
    victims: List[RunningTask] = []
    # Smallest need that failed, per (label, spans agents): larger needs fail too,
    # since the slots reachable only shrink as rooms are made.
    failed: Dict[Tuple[str, bool], int] = {}
    heap: List[_Entry] = [_entry(g, future) for g in blocked]
    heapq.heapify(heap)
    while heap and candidates:
        group = groups[heapq.heappop(heap)[1][1]]
        task = group.queue[0]
        if future[group.name] + task.slots_needed > target[group.name]:
            continue
        key = (task.agent_label, pool.spans(task))
        if task.slots_needed >= failed.get(key, task.slots_needed + 1):
            continue
        room = make_room(pool, task, fit, candidates)
        if room is None:
            failed[key] = task.slots_needed
            continue
        if room.victims:
            gone = {id(v) for v in room.victims}
            candidates = [c for c in candidates if id(c) not in gone]
            victims.extend(room.victims)
        future[group.name] += task.slots_needed
        group.queue.popleft()
        if group.queue:
            heapq.heappush(heap, _entry(group, future))
    return victims
