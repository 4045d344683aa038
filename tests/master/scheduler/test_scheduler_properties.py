"""Properties of ``schedule`` over random clusters, checked with hypothesis.

Scenarios mix agent sizes, labels, disabled agents and slots, multi-slot tasks,
weights, ``max_slots``, priorities, non-preemptible tasks and tasks already running
anywhere (including on disabled agents).
"""

import dataclasses
import os
import time
from collections import Counter
from typing import Dict, List, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from determined.master.scheduler import Agent, Allocation, Decision, SchedulerPolicy, Task, schedule

Running = Dict[str, Tuple[Task, Allocation]]
POLICIES = st.builds(SchedulerPolicy, type=st.sampled_from(["fair_share", "priority"]), fit=st.sampled_from(["best", "worst"]))
# SCHEDULER_EXAMPLES=5000 runs a longer search.
SETTINGS = settings(max_examples=int(os.environ.get("SCHEDULER_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw, unit=False, simple=False):
    """(agents, pending, running); ``simple``: no labels, nothing disabled or locked."""
    agents = []
    for i in range(draw(st.integers(1, 4))):
        slots = draw(st.integers(0 if not simple else 1, 4))
        enabled = simple or draw(st.sampled_from([True, True, True, False]))
        label = "" if simple else draw(st.sampled_from(["", "", "x"]))
        disabled = set()
        if not simple and slots and draw(st.integers(0, 3)) == 0:
            disabled = draw(st.sets(st.integers(0, slots - 1), max_size=slots))
        agents.append(Agent(f"n{i}", slots, enabled=enabled, label=label, disabled_slots=disabled))
    tasks: List[Task] = []
    n_groups = draw(st.integers(1, 4))
    total = draw(st.integers(0, 16))
    arrivals = draw(st.permutations(range(total)))
    settings_of = [
        dict(
            weight=draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0])),
            max_slots=draw(st.one_of(st.none(), st.integers(1, 8))),
            priority=draw(st.sampled_from([None, 1, 50])),
        )
        for _ in range(n_groups)
    ]
    for k, arrival in enumerate(arrivals):
        g = draw(st.integers(0, n_groups - 1))
        tasks.append(
            Task(
                f"t{k}",
                f"g{g}",
                1 if unit else draw(st.sampled_from([1, 1, 1, 2, 3, 5])),
                arrival=arrival,
                agent_label="" if simple else draw(st.sampled_from(["", "", "", "x", "y"])),
                preemptible=simple or draw(st.sampled_from([True, True, True, False])),
                **settings_of[g],
            )
        )
    # Some tasks already run, on any free slots (disabled ones too), in a random start order.
    free = [(a.id, s) for a in agents for s in range(a.slots)]
    free = draw(st.permutations(free))
    running: Running = {}
    pending: List[Task] = []
    for task in draw(st.permutations(tasks)):
        if draw(st.booleans()) and len(free) >= task.slots_needed:
            taken, free = free[: task.slots_needed], free[task.slots_needed :]
            parts: Dict[str, List[int]] = {}
            for agent_id, slot in taken:
                parts.setdefault(agent_id, []).append(slot)
            running[task.id] = (task, Allocation(task.id, list(parts.items())))
        else:
            pending.append(task)
    return agents, pending, running


def usable(agents) -> Dict[str, set]:
    return {a.id: set(a.usable_slots) for a in agents}


def eligible(agents, task: Task) -> List[Agent]:
    return [a for a in agents if not task.agent_label or a.label == task.agent_label]


def can_ever_fit(agents, task: Task) -> bool:
    return sum(len(a.usable_slots) for a in eligible(agents, task)) >= task.slots_needed


def held(running: Running) -> Counter:
    counts: Counter = Counter()
    for task, allocation in running.values():
        counts[task.group] += allocation.slot_count
    return counts


def apply(decision: Decision, pending: List[Task], running: Running, stop_preempted=True):
    by_id = {t.id: t for t in pending}
    running = dict(running)
    for allocation in decision.start:
        running[allocation.task_id] = (by_id.pop(allocation.task_id), allocation)
    if stop_preempted:
        for task_id in decision.preempt:
            by_id[task_id] = running.pop(task_id)[0]
    return sorted(by_id.values(), key=lambda t: t.id), running


def check_valid(agents, pending, running, decision):
    by_id = {t.id: t for t in pending}
    ok_slots = usable(agents)
    used = {(agent_id, s) for _, a in running.values() for agent_id, slots in a.parts for s in slots}
    started = [a.task_id for a in decision.start]
    assert len(set(started)) == len(started) and set(started) <= set(by_id)
    for allocation in decision.start:
        task = by_id[allocation.task_id]
        assert allocation.slot_count == task.slots_needed
        for agent_id, slots in allocation.parts:
            agent = next(a for a in agents if a.id == agent_id)
            assert not task.agent_label or agent.label == task.agent_label
            for slot in slots:
                assert slot in ok_slots[agent_id], "slot is disabled or does not exist"
                assert (agent_id, slot) not in used, "slot double-booked"
                used.add((agent_id, slot))
        if len(allocation.parts) > 1:
            assert all(len(a.usable_slots) < task.slots_needed for a in eligible(agents, task))
    assert len(set(decision.preempt)) == len(decision.preempt)
    for task_id in decision.preempt:
        task, allocation = running[task_id]
        assert task.preemptible
        assert all(s in ok_slots.get(agent_id, ()) for agent_id, slots in allocation.parts for s in slots)
    if not pending:
        assert decision.is_empty
    before = held(running)
    after = held({**running, **{a.task_id: (by_id[a.task_id], a) for a in decision.start}})
    for task in list(by_id.values()) + [t for t, _ in running.values()]:
        if task.max_slots is not None:
            assert after[task.group] <= max(task.max_slots, before[task.group])


@SETTINGS
@given(scenarios(), POLICIES)
def test_decisions_are_valid(scenario, policy):
    agents, pending, running = scenario
    check_valid(agents, pending, running, schedule(agents, pending, running, policy))


@SETTINGS
@given(scenarios(), POLICIES)
def test_asking_again_before_preempted_tasks_stop_changes_nothing(scenario, policy):
    agents, pending, running = scenario
    first = schedule(agents, pending, running, policy)
    pending, running = apply(first, pending, running, stop_preempted=False)
    second = schedule(agents, pending, running, policy)
    assert second.start == []
    assert sorted(second.preempt) == sorted(first.preempt)


def test_a_non_preemptible_task_gets_no_extra_slots_its_group_could_not_give_back():
    """Hypothesis found this: the handout made the next call preempt t6 for g1."""
    agents = [Agent("n0", 1), Agent("n1", 4), Agent("n2", 0), Agent("n3", 1)]

    def task(task_id, group, slots, arrival, preemptible=True):
        return Task(task_id, group, slots, arrival=arrival, weight=0.5, preemptible=preemptible)

    pending = [task("t0", "g0", 1, 0), task("t7", "g0", 1, 1, preemptible=False), task("t4", "g1", 2, 4)]
    running: Running = {
        "t2": (task("t2", "g0", 1, 2), Allocation("t2", [("n0", [0])])),
        "t6": (task("t6", "g0", 3, 6), Allocation("t6", [("n1", [0, 1, 2])])),
    }
    policy = SchedulerPolicy(type="fair_share", fit="best")
    first = schedule(agents, pending, running, policy)
    assert [a.task_id for a in first.start] == ["t0"] and first.preempt == []
    pending, running = apply(first, pending, running)
    assert schedule(agents, pending, running, policy).is_empty


def test_a_started_non_preemptible_task_is_a_floor_of_the_shares_it_started_under():
    """Hypothesis found this: t2's start moved the targets; the next call preempted t9."""
    agents = [Agent("n0", 2), Agent("n1", 1)]
    weights = {"g0": 1.0, "g1": 1.0, "g2": 3.0}
    pending = [Task("t2", "g0", 1, arrival=0, preemptible=False)]
    pending += [Task(f"t{i}", "g0", 1, arrival=i) for i in (0, 1, 3, 4, 5, 6, 10, 11, 12, 13, 14) if i]
    pending += [Task("t8", "g1", 1, arrival=7), Task("t7", "g2", 1, arrival=8), Task("t9", "g2", 1, arrival=9)]
    pending = [dataclasses.replace(t, weight=weights[t.group]) for t in pending]
    policy = SchedulerPolicy(type="fair_share", fit="best")
    first = schedule(agents, pending, {}, policy)
    assert sorted(a.task_id for a in first.start) == ["t2", "t7", "t8"] and first.preempt == []
    pending, running = apply(first, pending, {})
    assert schedule(agents, pending, running, policy).is_empty


def test_no_extra_slots_for_a_non_preemptible_task_whose_group_started_a_preemptible_one():
    """Hypothesis found this: t13 got n1's free slots; the next call preempted t7 for t8."""
    agents = [Agent("n0", 0), Agent("n1", 3), Agent("n2", 1), Agent("n3", 2, label="x")]

    def task(task_id, group, slots, arrival, **kwargs):
        return Task(task_id, group, slots, arrival=arrival, weight=0.5, **kwargs)

    pending = [task("t0", "g0", 1, 0), task("t1", "g0", 1, 1), task("t8", "g0", 1, 2, agent_label="x")]
    pending += [task(f"t{i}", "g0", 1, i) for i in (3, 4, 5, 6, 9, 10, 11, 12)]
    pending += [task("t7", "g1", 1, 7), task("t2", "g1", 1, 8, preemptible=False),
                task("t13", "g1", 2, 13, preemptible=False)]
    policy = SchedulerPolicy(type="fair_share", fit="best")
    first = schedule(agents, pending, {}, policy)
    assert "t13" not in [a.task_id for a in first.start] and first.preempt == []
    pending, running = apply(first, pending, {})
    assert schedule(agents, pending, running, policy).is_empty


def test_a_redone_pass_never_assumes_a_floor_it_did_not_start():
    """Hypothesis found this: a pass redone with t0's floor (g0 at 2) did not start t0,
    so t3 and t9 preempted each other in turn, forever."""
    agents = [Agent("n0", 2), Agent("n1", 2), Agent("n2", 0)]
    g0 = [Task("t0", "g0", 1, arrival=0, weight=3.0, preemptible=False)]
    g0 += [Task(f"t{i}", "g0", 1, arrival=i, weight=3.0) for i in (1, 2, 4, 5, 6, 7, 8)]
    pending = g0 + [Task("t9", "g1", 2, arrival=9, weight=3.0)]
    running: Running = {
        "t10": (Task("t10", "g0", 1, arrival=10, weight=3.0, preemptible=False),
                Allocation("t10", [("n0", [0])])),
        "t3": (Task("t3", "g2", 1, arrival=3, weight=1.0), Allocation("t3", [("n0", [1])])),
    }
    policy = SchedulerPolicy(type="fair_share", fit="best")
    seen = []
    for _ in range(10):
        decision = schedule(agents, pending, running, policy)
        if decision.is_empty:
            break
        seen.append(sorted(running))
        assert seen.count(sorted(running)) == 1, f"the cluster came back to {sorted(running)}"
        pending, running = apply(decision, pending, running)
    else:
        raise AssertionError("no fixed point after 10 rounds")
    assert "t0" in running


def test_a_redone_pass_keeps_the_places_of_the_pass_before():
    """Hypothesis found this: redone around the committed t4, the pass placed t0 and t1
    anew (worst fit) so that the older t7 (2 slots) no longer fitted; t4 started ahead."""
    agents = [Agent("n0", 0), Agent("n1", 2), Agent("n2", 3)]

    def task(task_id, slots, arrival, **kwargs):
        return Task(task_id, "g0", slots, arrival=arrival, weight=0.5, **kwargs)

    pending = [task("t0", 1, 0), task("t1", 1, 1), task("t2", 1, 2, agent_label="x"),
               task("t3", 1, 5), task("t4", 1, 4, preemptible=False), task("t5", 1, 6),
               task("t6", 1, 7), task("t7", 2, 3)]
    decision = schedule(agents, pending, {}, SchedulerPolicy(type="fair_share", fit="worst"))
    assert sorted(a.task_id for a in decision.start) == ["t0", "t1", "t4", "t7"], decision


@SETTINGS
@given(scenarios(), POLICIES)
def test_applied_decision_without_preemption_is_a_fixed_point(scenario, policy):
    agents, pending, running = scenario
    first = schedule(agents, pending, running, policy)
    if first.preempt:
        return
    pending, running = apply(first, pending, running)
    assert schedule(agents, pending, running, policy).is_empty


@SETTINGS
@given(scenarios(), POLICIES)
def test_repeated_scheduling_settles(scenario, policy):
    agents, pending, running = scenario
    for _ in range(40):
        decision = schedule(agents, pending, running, policy)
        check_valid(agents, pending, running, decision)
        if decision.is_empty:
            break
        pending, running = apply(decision, pending, running)
    else:
        raise AssertionError("no fixed point after 40 rounds")
    # At rest, nothing that could start is left waiting while its slots sit free.
    ok_slots = usable(agents)
    free = sum(len(s) for s in ok_slots.values()) - sum(
        1 for _, a in running.values() for agent_id, slots in a.parts for s in slots if s in ok_slots.get(agent_id, ())
    )
    if policy.type == "fair_share" and all(t.slots_needed == 1 and not t.agent_label for t in pending):
        capped = {t.group for t in pending if t.max_slots is not None and held(running)[t.group] >= t.max_slots}
        assert free == 0 or all(t.group in capped for t in pending)


@SETTINGS
@given(scenarios(), POLICIES)
def test_tasks_start_first_come_first_served(scenario, policy):
    agents, pending, running = scenario
    decision = schedule(agents, pending, running, policy)
    started = {a.task_id for a in decision.start}
    after = held({**running, **{a.task_id: (next(t for t in pending if t.id == a.task_id), a) for a in decision.start}})
    waiting = [t for t in pending if can_ever_fit(agents, t) and t.id not in started]
    for task in pending:
        if task.id not in started:
            continue
        for other in waiting:
            capped = other.max_slots is not None and after[other.group] + other.slots_needed > other.max_slots
            if policy.type == "priority":
                earlier = (other.effective_priority, other.arrival, other.id) < (task.effective_priority, task.arrival, task.id)
                assert not earlier or capped, f"{other.id} waits behind {task.id}"
            elif other.group == task.group:
                assert other.arrival > task.arrival, f"{other.id} waits behind {task.id} in its group"


def weighted_max_min(capacity: int, weights: Dict[str, float], demands: Dict[str, int]) -> Dict[str, float]:
    """Reference shares by bisection on the fill level."""
    if sum(demands.values()) <= capacity:
        return {g: float(d) for g, d in demands.items()}
    lo, hi = 0.0, max(d / weights[g] for g, d in demands.items()) + 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        total = sum(min(d, mid * weights[g]) for g, d in demands.items())
        lo, hi = (mid, hi) if total < capacity else (lo, mid)
    return {g: min(d, hi * weights[g]) for g, d in demands.items()}


@SETTINGS
@given(scenarios(unit=True, simple=True), st.sampled_from(["best", "worst"]), st.integers(0, 3))
def test_fair_share_converges_to_weighted_max_min(scenario, fit, late_group):
    agents, pending, running = scenario
    tasks = pending + [t for t, _ in running.values()]
    policy = SchedulerPolicy(fit=fit)

    def settle(pending, running):
        for _ in range(40):
            decision = schedule(agents, pending, running, policy)
            if decision.is_empty:
                return pending, running
            pending, running = apply(decision, pending, running)
        raise AssertionError("no fixed point after 40 rounds")

    # One group arrives after the others have settled (and may hold every slot).
    first = [t for t in tasks if t.group != f"g{late_group}"]
    pending, running = settle(first, {})
    pending, running = settle(pending + [t for t in tasks if t.group == f"g{late_group}"], running)

    weights = {t.group: t.weight for t in tasks}
    demands = Counter(t.group for t in tasks)
    for t in tasks:
        if t.max_slots is not None:
            demands[t.group] = min(demands[t.group], t.max_slots)
    capacity = sum(a.slots for a in agents)
    expected = weighted_max_min(capacity, weights, dict(demands))
    got = held(running)
    for group, share in expected.items():
        assert abs(got[group] - share) <= 1 + 1e-6, (group, got, expected)


def test_five_hundred_pending_tasks_on_eight_slots_is_fast():
    agents = [Agent(f"n{i}", 1) for i in range(8)]
    pending = [Task(f"t{i}", f"g{i % 25}", 1, arrival=i, weight=1.0 + i % 25 % 3) for i in range(500)]
    running: Running = {}
    for i in range(8):
        task = Task(f"r{i}", "hog", 1, arrival=-10 + i, priority=99)
        running[task.id] = (task, Allocation(task.id, [(f"n{i}", [0])]))
    for policy in (SchedulerPolicy(), SchedulerPolicy(fit="worst"), SchedulerPolicy(type="priority")):
        for running_now in ({}, running):
            schedule(agents, pending, running_now, policy)  # warm up
            timings = []
            for _ in range(5):
                start = time.perf_counter()
                decision = schedule(agents, pending, running_now, policy)
                timings.append(time.perf_counter() - start)
            assert not decision.is_empty
            assert min(timings) < 0.05, f"{policy}: {min(timings) * 1000:.1f} ms"
