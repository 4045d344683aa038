"""The priority policy: order by (priority, arrival), strict FIFO, preemption of lower priority."""

from determined.master.scheduler import DEFAULT_PRIORITY, Agent, Allocation, SchedulerPolicy, Task, schedule

PRIORITY = SchedulerPolicy(type="priority")


def task(task_id, arrival, priority=None, slots=1, group=None, **kw) -> Task:
    return Task(task_id, group or f"exp-{task_id}", slots, arrival=arrival, priority=priority, **kw)


def started(decision):
    return [a.task_id for a in decision.start]


def run_on(agent_slots):
    """Running tasks r0, r1, ... (in start order), one slot each, on agent "a"."""

    def make(*priorities, **kw):
        running = {}
        for i, priority in enumerate(priorities):
            t = task(f"r{i}", arrival=i, priority=priority, **kw)
            running[t.id] = (t, Allocation(t.id, [("a", [i])]))
        return running

    return [Agent("a", agent_slots)], make


def test_order_is_priority_then_arrival():
    pending = [
        task("late-urgent", 5, priority=1),
        task("default-early", 0),
        task("low", 1, priority=50),
        task("default-late", 3, priority=DEFAULT_PRIORITY),
    ]
    decision = schedule([Agent("a", 3)], pending, {}, PRIORITY)
    assert started(decision) == ["late-urgent", "default-early", "default-late"]


def test_strict_fifo_blocks_later_tasks_that_could_fit():
    agents = [Agent("a", 4)]
    running = {"r": (task("r", 0), Allocation("r", [("a", [0])]))}
    pending = [task("big", 1, slots=4), task("small", 2)]
    assert schedule(agents, pending, running, PRIORITY).is_empty


def test_higher_priority_preempts_lowest_priority_newest_first():
    agents, make = run_on(4)
    running = make(60, 50, 60, 50)  # r0..r3
    decision = schedule(agents, [task("urgent", 10, priority=1, slots=2)], running, PRIORITY)
    assert decision.start == []
    assert decision.preempt == ["r2", "r0"]  # priority 60 first, newest of those first


def test_equal_priority_does_not_preempt():
    agents, make = run_on(2)
    running = make(None, None)
    assert schedule(agents, [task("same", 10)], running, PRIORITY).is_empty


def test_no_preemption_when_it_would_not_make_room():
    agents, make = run_on(4)
    running = make(1, 1, 1, 99)  # only one low-priority task: one slot, need two
    decision = schedule(agents, [task("urgent", 10, priority=5, slots=2)], running, PRIORITY)
    assert decision.is_empty


def test_preempted_room_is_used_after_the_task_stops():
    agents, make = run_on(2)
    running = make(None, 90)
    urgent = task("urgent", 10, priority=1)
    decision = schedule(agents, [urgent], running, PRIORITY)
    assert decision.preempt == ["r1"]
    # Until r1 stops, asking again repeats the preemption and starts nothing.
    again = schedule(agents, [urgent], running, PRIORITY)
    assert again.preempt == ["r1"] and again.start == []
    del running["r1"]
    assert started(schedule(agents, [urgent], running, PRIORITY)) == ["urgent"]


def test_non_preemptible_tasks_are_kept():
    agents, make = run_on(1)
    running = make(99, preemptible=False)
    assert schedule(agents, [task("urgent", 10, priority=1)], running, PRIORITY).is_empty


def test_max_slots_skips_without_blocking():
    pending = [task(f"a{i}", i, group="a", max_slots=1) for i in range(3)] + [task("b", 10)]
    decision = schedule([Agent("x", 4)], pending, {}, PRIORITY)
    assert started(decision) == ["a0", "b"]


def test_preempts_no_more_than_needed():
    agents = [Agent("a", 3)]
    big = task("big", 0, priority=60, slots=2)
    small = task("small", 1, priority=99)
    running = {
        "big": (big, Allocation("big", [("a", [0, 1])])),
        "small": (small, Allocation("small", [("a", [2])])),
    }
    # "small" is the first candidate (lowest priority) but freeing it alone is not
    # enough; once "big" is taken, "small" is not needed any more.
    decision = schedule(agents, [task("urgent", 5, priority=1, slots=2)], running, PRIORITY)
    assert decision.preempt == ["big"]


def test_prefers_the_agent_needing_the_fewest_preempted_slots():
    agents = [Agent("x", 2), Agent("y", 2)]
    old = task("old", 0, priority=99)
    new = task("new", 1, priority=99, slots=2)
    running = {"old": (old, Allocation("old", [("x", [0])])), "new": (new, Allocation("new", [("y", [0, 1])]))}
    decision = schedule(agents, [task("urgent", 5, priority=1, slots=2)], running, PRIORITY)
    assert decision.preempt == ["old"]


def test_prefers_preempting_the_newest_task_among_equals():
    agents = [Agent("x", 1), Agent("y", 1)]
    running = {}
    for i, agent in enumerate("xy"):
        t = task(f"r{i}", i, priority=99)
        running[t.id] = (t, Allocation(t.id, [(agent, [0])]))
    decision = schedule(agents, [task("urgent", 5, priority=1)], running, PRIORITY)
    assert decision.preempt == ["r1"]


def test_a_task_that_cannot_get_room_ends_the_pass():
    agents = [Agent("x", 3)]
    peer = task("peer", 0, priority=1, slots=2)
    low = task("low", 1, priority=99)
    running = {"peer": (peer, Allocation("peer", [("x", [0, 1])])), "low": (low, Allocation("low", [("x", [2])]))}
    # "first" cannot get two slots (only "low" is below it); "second" could preempt
    # "low", but could not start before "first" anyway, so nothing is preempted.
    pending = [task("first", 2, priority=1, slots=2), task("second", 3, priority=50)]
    assert schedule(agents, pending, running, PRIORITY).is_empty
