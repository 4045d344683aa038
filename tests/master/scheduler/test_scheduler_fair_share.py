"""Explicit fair-share cases: weights, max_slots, preemption of the newest tasks."""

from collections import Counter
from typing import Dict, List, Tuple

from determined.master.scheduler import Agent, Allocation, Decision, SchedulerPolicy, Task, schedule

Running = Dict[str, Tuple[Task, Allocation]]


def tasks(group: str, n: int, first: int = 0, slots_needed: int = 1, **kw) -> List[Task]:
    return [Task(f"{group}{i}", group, slots_needed, arrival=first + i, **kw) for i in range(n)]


def groups_of(decision: Decision, pending: List[Task]) -> Counter:
    by_id = {t.id: t for t in pending}
    return Counter(by_id[a.task_id].group for a in decision.start)


def apply(decision: Decision, pending: List[Task], running: Running) -> Tuple[List[Task], Running]:
    """Start what was started; preempted tasks stop and wait again."""
    by_id = {t.id: t for t in pending}
    running = dict(running)
    for alloc in decision.start:
        running[alloc.task_id] = (by_id.pop(alloc.task_id), alloc)
    for task_id in decision.preempt:
        task, _ = running.pop(task_id)
        by_id[task.id] = task
    return list(by_id.values()), running


def settle(agents, pending, running=None, policy=None, rounds=20):
    running = dict(running or {})
    for _ in range(rounds):
        decision = schedule(agents, pending, running, policy)
        if decision.is_empty:
            return pending, running
        pending, running = apply(decision, pending, running)
    raise AssertionError("scheduling did not settle")


def held(running: Running) -> Counter:
    counts: Counter = Counter()
    for task, alloc in running.values():
        counts[task.group] += alloc.slot_count
    return counts


EIGHT_SINGLE = [Agent(f"n{i}", 1) for i in range(8)]
ONE_EIGHT = [Agent("big", 8)]


def test_equal_weights_split_evenly():
    for agents in (EIGHT_SINGLE, ONE_EIGHT):
        pending = tasks("a", 10) + tasks("b", 10, first=100)
        decision = schedule(agents, pending, {})
        assert groups_of(decision, pending) == {"a": 4, "b": 4}
        assert decision.preempt == []


def test_weights_three_to_one():
    pending = tasks("a", 10, weight=3.0) + tasks("b", 10, first=100, weight=1.0)
    assert groups_of(schedule(EIGHT_SINGLE, pending, {}), pending) == {"a": 6, "b": 2}


def test_max_slots_caps_a_group_and_others_get_the_rest():
    pending = tasks("a", 10, max_slots=2) + tasks("b", 10, first=100) + tasks("c", 10, first=200)
    assert groups_of(schedule(ONE_EIGHT, pending, {}), pending) == {"a": 2, "b": 3, "c": 3}


def test_small_demand_leaves_the_rest_to_others():
    pending = tasks("a", 1) + tasks("b", 20, first=100)
    assert groups_of(schedule(ONE_EIGHT, pending, {}), pending) == {"a": 1, "b": 7}


def test_new_group_preempts_the_most_recently_started_tasks():
    pending, running = settle(EIGHT_SINGLE, tasks("a", 12))
    assert held(running) == {"a": 8}
    started = list(running)  # start order
    newcomers = tasks("b", 6, first=100)
    decision = schedule(EIGHT_SINGLE, pending + newcomers, running)
    assert decision.start == []
    assert sorted(decision.preempt) == sorted(started[-4:])
    # Asked again before the preempted tasks stop: the same preemptions, nothing else.
    again = schedule(EIGHT_SINGLE, pending + newcomers, running)
    assert again.start == [] and sorted(again.preempt) == sorted(decision.preempt)
    pending, running = apply(decision, pending + newcomers, running)
    decision = schedule(EIGHT_SINGLE, pending, running)
    assert groups_of(decision, pending) == {"b": 4} and decision.preempt == []
    pending, running = apply(decision, pending, running)
    assert held(running) == {"a": 4, "b": 4}
    assert schedule(EIGHT_SINGLE, pending, running).is_empty


def test_third_group_takes_from_both():
    pending, running = settle(EIGHT_SINGLE, tasks("a", 10) + tasks("b", 10, first=100))
    pending, running = settle(EIGHT_SINGLE, pending + tasks("c", 10, first=200), running)
    counts = held(running)
    assert sorted(counts.values()) == [2, 3, 3] and sum(counts.values()) == 8


def place(specs) -> Running:
    """Running tasks of group "a" in start order: one (agent, slot) each."""
    running: Running = {}
    for i, (agent, slot) in enumerate(specs):
        task = Task(f"a{i}", "a", 1, arrival=i)
        running[task.id] = (task, Allocation(task.id, [(agent, [slot])]))
    return running


def test_preempts_just_enough_on_the_agent_that_helps():
    agents = [Agent("x", 4), Agent("y", 4)]
    running = place([("x", 0), ("x", 1), ("x", 2), ("x", 3), ("y", 0), ("y", 1)])
    decision = schedule(agents, [Task("b0", "b", 4, arrival=100)], running)
    assert decision.start == [] and sorted(decision.preempt) == ["a4", "a5"]


def test_no_preemption_that_would_not_make_the_task_fit():
    agents = [Agent("x", 4), Agent("y", 4)]
    # The two tasks beyond the share of "a" (its newest) sit on "x", which they cannot
    # clear; the free slots are on "y". Preempting them would not let "b0" start.
    running = place([("y", 0), ("y", 1), ("x", 0), ("x", 1), ("x", 2), ("x", 3)])
    decision = schedule(agents, [Task("b0", "b", 4, arrival=100)], running)
    assert decision.preempt == [] and decision.start == []


def test_no_preemption_for_a_task_larger_than_its_groups_share():
    agents = [Agent("x", 4), Agent("y", 4)]
    running = place([("x", 0), ("x", 1), ("x", 2), ("x", 3), ("y", 0), ("y", 1), ("y", 2), ("y", 3)])
    decision = schedule(agents, [Task("b0", "b", 5, arrival=100)], running)
    assert decision.is_empty


def test_multi_slot_newcomer_gets_a_whole_agent_after_preemption():
    agents = [Agent("x", 4), Agent("y", 4)]
    pending, running = settle(agents, tasks("a", 10))  # best fit packs: a0-a3 on x, a4-a7 on y
    big = Task("b0", "b", 4, arrival=100)
    decision = schedule(agents, pending + [big], running)
    assert decision.start == [] and sorted(decision.preempt) == ["a4", "a5", "a6", "a7"]
    pending, running = apply(decision, pending + [big], running)
    decision = schedule(agents, pending, running)
    assert [(a.task_id, a.parts) for a in decision.start] == [("b0", (("y", (0, 1, 2, 3)),))]


def test_non_preemptible_tasks_are_kept_and_count_toward_the_share():
    running: Running = {}
    for i in range(8):
        group = "a" if i < 6 else "b"
        task = Task(f"{group}{i}", group, 1, arrival=i, preemptible=group == "b")
        running[task.id] = (task, Allocation(task.id, [(f"n{i}", [0])]))
    # "a" keeps its six locked slots (its share is floored there); the other two are
    # split between "b" and the newcomer "c", so "b" gives back its newest task.
    decision = schedule(EIGHT_SINGLE, tasks("c", 4, first=100), running)
    assert decision.preempt == ["b7"]
    locked_only = {k: v for k, v in running.items() if k.startswith("a")}
    decision = schedule(EIGHT_SINGLE, tasks("c", 4, first=100), locked_only)
    assert len(decision.start) == 2 and decision.preempt == []


def test_a_groups_share_is_capped_by_the_slots_its_label_reaches():
    agents = [Agent("x", 6), Agent("g", 2, label="gpu")]
    running: Running = {}
    for i in range(6):
        task = Task(f"b{i}", "b", 1, arrival=i)
        running[task.id] = (task, Allocation(task.id, [("x", [i])]))
    for i in range(2):
        task = Task(f"a{i}", "a", 1, arrival=10 + i, agent_label="gpu")
        running[task.id] = (task, Allocation(task.id, [("g", [i])]))
    pending = [Task(f"a{i + 2}", "a", 1, arrival=20 + i, agent_label="gpu") for i in range(4)]
    # "a" can never use more than the 2 gpu slots, so "b" and "c" share the other 6.
    pending, running = settle(agents, pending + tasks("c", 6, first=100), running)
    assert held(running) == {"a": 2, "b": 3, "c": 3}


def test_within_a_group_tasks_start_in_arrival_order():
    pending = [Task(f"t{i}", "a", 1, arrival=10 - i) for i in range(10)]
    decision = schedule(ONE_EIGHT, pending, {})
    assert [a.task_id for a in decision.start] == [f"t{i}" for i in range(9, 1, -1)]


def test_big_head_blocks_its_own_group_but_not_others():
    agents = [Agent("x", 4)]
    running = {"r": (Task("r", "c", 1, arrival=0), Allocation("r", [("x", [0])]))}
    pending = [Task("a-big", "a", 4, arrival=1), Task("a-small", "a", 1, arrival=2), Task("b0", "b", 1, arrival=3)]
    decision = schedule(agents, pending, running)
    started = {a.task_id for a in decision.start}
    assert "a-big" not in started and "a-small" not in started
    assert "b0" in started


def test_weight_change_rebalances():
    pending, running = settle(ONE_EIGHT, tasks("a", 10) + tasks("b", 10, first=100))
    assert held(running) == {"a": 4, "b": 4}

    def reweight(task: Task) -> Task:
        if task.group != "a":
            return task
        return Task(task.id, task.group, task.slots_needed, task.arrival, weight=3.0)

    pending = [reweight(t) for t in pending]
    running = {k: (reweight(t), a) for k, (t, a) in running.items()}
    pending, running = settle(ONE_EIGHT, pending, running)
    assert held(running) == {"a": 6, "b": 2}


def test_policy_default_is_fair_share_best_fit():
    assert SchedulerPolicy() == SchedulerPolicy(type="fair_share", fit="best")


def test_most_recently_started_tasks_are_preempted_first_across_groups():
    agents = [Agent("x", 6)]
    running: Running = {}
    for i, group in enumerate("ababab"):
        task = Task(f"{group}{i}", group, 1, arrival=i, max_slots=2)  # max_slots was just lowered
        running[task.id] = (task, Allocation(task.id, [("x", [i])]))
    decision = schedule(agents, [Task("c0", "c", 1, arrival=10)], running)
    assert decision.preempt == ["b5"]


def test_free_slots_go_to_the_group_furthest_below_its_weighted_share():
    agents = [Agent("x", 11)]
    running: Running = {}
    holders = ["a"] * 5 + ["b"] * 3 + ["c"] * 2
    for i, group in enumerate(holders):
        task = Task(f"{group}{i}", group, 1, arrival=i, weight=2.0 if group == "b" else 1.0)
        running[task.id] = (task, Allocation(task.id, [("x", [i])]))
    pending = tasks("b", 5, first=100, weight=2.0) + tasks("c", 5, first=200)
    # Shares 3 / 5 / 3. "b" holds 3 of 5 (3/2 = 1.5 per unit of weight), "c" 2 of 3
    # (2 per unit): the one free slot goes to "b"; "a" gives back its two newest.
    decision = schedule(agents, pending, running)
    assert [a.task_id for a in decision.start] == ["b0"]
    assert decision.preempt == ["a4", "a3"]
