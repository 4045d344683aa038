"""Where tasks go: best vs worst fit, all-or-nothing, spanning, labels, disabled slots."""

from determined.master.scheduler import Agent, Allocation, SchedulerPolicy, Task, schedule

BEST = SchedulerPolicy(fit="best")
WORST = SchedulerPolicy(fit="worst")


def one(group="g", slots=1, arrival=0, task_id=None, **kw) -> Task:
    return Task(task_id or f"{group}-{arrival}", group, slots, arrival=arrival, **kw)


def parts_of(decision):
    return {a.task_id: a.parts for a in decision.start}


def test_best_and_worst_fit_choose_different_agents():
    agents = [Agent("big", 8), Agent("small", 2)]
    task = one(slots=2)
    assert parts_of(schedule(agents, [task], {}, BEST)) == {task.id: (("small", (0, 1)),)}
    assert parts_of(schedule(agents, [task], {}, WORST)) == {task.id: (("big", (0, 1)),)}


def test_fit_counts_free_slots_not_sizes():
    agents = [Agent("a", 4), Agent("b", 4)]
    running = {"r": (one("r", task_id="r"), Allocation("r", [("a", [0])]))}
    task = one(arrival=1)
    assert parts_of(schedule(agents, [task], running, BEST))[task.id] == (("a", (1,)),)
    assert parts_of(schedule(agents, [task], running, WORST))[task.id] == (("b", (0,)),)


def test_multi_slot_task_is_all_or_nothing():
    agents = [Agent("a", 4)]
    running = {"r": (one("r", task_id="r"), Allocation("r", [("a", [2])]))}
    decision = schedule(agents, [one("g", slots=4, arrival=1)], running)
    assert decision.is_empty  # three free slots are not four


def test_multi_slot_task_does_not_span_when_one_agent_is_large_enough():
    agents = [Agent("a", 4), Agent("b", 4)]
    running = {
        "r1": (one("r", task_id="r1"), Allocation("r1", [("a", [0])])),
        "r2": (one("r", task_id="r2", arrival=1), Allocation("r2", [("b", [0])])),
    }
    # Six slots are free, but no agent has four free: wait rather than span.
    assert schedule(agents, [one("g", slots=4, arrival=5)], running).start == []


def test_task_larger_than_every_agent_spans_agents():
    agents = [Agent("a", 4), Agent("b", 4), Agent("c", 2)]
    task = one(slots=8)
    allocation = schedule(agents, [task], {}).start[0]
    assert allocation.slot_count == 8
    assert allocation.parts == (("a", (0, 1, 2, 3)), ("b", (0, 1, 2, 3)))
    assert [a.agent_id for a in allocation.assignments()] == ["a", "b"]


def test_spanning_takes_the_agents_with_most_free_slots_first():
    agents = [Agent("a", 2), Agent("b", 2), Agent("c", 2)]
    running = {
        "r1": (one("r", task_id="r1"), Allocation("r1", [("a", [0])])),
        "r2": (one("r", task_id="r2", arrival=1), Allocation("r2", [("b", [0])])),
    }
    allocation = schedule(agents, [one("g", slots=3, arrival=5)], running).start[0]
    assert allocation.parts == (("c", (0, 1)), ("a", (1,)))


def test_labels_restrict_agents():
    agents = [Agent("cpu", 4), Agent("gpu", 2, label="gpu")]
    labelled = one("g", arrival=0, agent_label="gpu")
    anywhere = one("h", arrival=1)
    decision = schedule(agents, [labelled, anywhere], {}, WORST)
    assert parts_of(decision) == {labelled.id: (("gpu", (0,)),), anywhere.id: (("cpu", (0,)),)}
    # A label no agent has: the task never fits and blocks nobody.
    nowhere = one("k", arrival=0, agent_label="tpu")
    decision = schedule(agents, [nowhere, anywhere], {})
    assert set(parts_of(decision)) == {anywhere.id}


def test_unlabelled_tasks_may_use_labelled_agents():
    agents = [Agent("gpu", 2, label="gpu")]
    assert len(schedule(agents, [one(slots=2)], {}).start) == 1


def test_disabled_agents_and_slots_are_not_used():
    agents = [Agent("off", 8, enabled=False), Agent("partly", 4, disabled_slots={0, 2})]
    decision = schedule(agents, [one("g", arrival=i) for i in range(4)], {})
    assert sorted(s for a in decision.start for _, slots in a.parts for s in slots) == [1, 3]
    assert {p[0] for a in decision.start for p in a.parts} == {"partly"}


def test_tasks_on_disabled_agents_are_not_preempted():
    agents = [Agent("off", 4, enabled=False), Agent("on", 4)]
    running = {}
    for i in range(4):
        task = one("a", arrival=i)
        running[task.id] = (task, Allocation(task.id, [("off", [i])]))
    for i in range(4):
        task = one("a", arrival=10 + i)
        running[task.id] = (task, Allocation(task.id, [("on", [i])]))
    newcomers = [one("b", arrival=100 + i) for i in range(4)]
    decision = schedule(agents, newcomers, running)
    # Only the four usable slots are shared (2 + 2); the tasks on "off" are left alone.
    assert sorted(decision.preempt) == ["a-12", "a-13"]


def test_max_slots_counts_tasks_on_disabled_agents():
    agents = [Agent("off", 2, enabled=False), Agent("on", 4)]
    running = {}
    for i in range(2):
        task = one("a", arrival=i, max_slots=3)
        running[task.id] = (task, Allocation(task.id, [("off", [i])]))
    decision = schedule(agents, [one("a", arrival=10 + i, max_slots=3) for i in range(4)], running)
    assert len(decision.start) == 1


def test_never_fitting_task_does_not_block_others():
    agents = [Agent("a", 4), Agent("b", 4)]
    huge = one("g", slots=9, arrival=0)
    later = [one("g", arrival=1 + i) for i in range(3)] + [one("h", arrival=10)]
    for policy in (SchedulerPolicy(), SchedulerPolicy(type="priority")):
        decision = schedule(agents, [huge] + later, {}, policy)
        assert {a.task_id for a in decision.start} == {t.id for t in later}


def test_task_that_could_fit_blocks_later_tasks_of_its_group():
    agents = [Agent("a", 4)]
    running = {"r": (one("r", task_id="r"), Allocation("r", [("a", [0])]))}
    head = one("g", slots=4, arrival=1)
    behind = one("g", arrival=2)
    assert schedule(agents, [head, behind], running).start == []


def test_task_on_unknown_agent_is_left_alone():
    agents = [Agent("a", 1)]
    ghost = one("a", task_id="ghost")
    running = {"ghost": (ghost, Allocation("ghost", [("gone", [0])]))}
    decision = schedule(agents, [one("b", arrival=5)], running)
    assert decision.preempt == [] and len(decision.start) == 1
