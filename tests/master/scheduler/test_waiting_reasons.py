"""Why a task waits: ``waiting_reasons`` over scheduler states (pure, milliseconds)."""

from determined.master.scheduler import (
    Agent,
    Allocation,
    SchedulerPolicy,
    Task,
    schedule,
    waiting_reasons,
)


def _running(*entries):
    return {t.id: (t, Allocation(t.id, parts)) for t, parts in entries}


def _why(agents, pending, running=None, policy=None, **kw):
    running = running or {}
    decision = schedule(agents, pending, running, policy)
    return waiting_reasons(agents, pending, running, decision, policy, **kw)


def test_started_tasks_have_no_reason():
    assert _why([Agent("a", 2)], [Task("t", "exp-1", 2, arrival=0)]) == {}


def test_no_agent_connected():
    w = _why([], [Task("t", "exp-1", 1, arrival=0)])["t"]
    assert w.reason == "no agent connected" and w.impossible


def test_all_agents_disabled():
    w = _why([Agent("a", 4, enabled=False), Agent("b", 4, enabled=False)],
             [Task("t", "exp-1", 1, arrival=0)])["t"]
    assert w.reason == "all agents disabled" and w.impossible
    assert "det agent enable" in w.detail


def test_no_agent_with_the_label():
    w = _why([Agent("a", 4, label="cpu")], [Task("t", "exp-1", 1, arrival=0, agent_label="gpu")])["t"]
    assert w.reason == "no agent labeled gpu" and w.impossible


def test_one_agent_task_bigger_than_the_largest_agent():
    agents = [Agent("a", 2), Agent("b", 2)]
    w = _why(agents, [Task("task-x", "task-x", 4, arrival=0, preemptible=False)],
             one_agent={"task-x"})["task-x"]
    assert w.reason == "needs 4 slots, largest agent has 2" and w.impossible


def test_a_trial_may_span_so_the_bound_is_the_cluster():
    agents = [Agent("a", 2), Agent("b", 2)]
    w = _why(agents, [Task("t", "exp-1", 5, arrival=0)])["t"]
    assert w.reason == "needs 5 slots, cluster has 4" and w.impossible
    assert _why(agents, [Task("t", "exp-1", 4, arrival=0)]) == {}


def test_span_groups_bound_what_a_trial_may_span():
    # The embedded agent joins no span: 2 remote slots + 2 embedded is not 4 together.
    agents = [Agent("embedded", 2), Agent("r1", 1), Agent("r2", 1)]
    w = waiting_reasons(agents, [Task("t", "exp-1", 3, arrival=0)], {},
                        span_groups=[{"r1", "r2"}])["t"]
    assert w.reason == "needs 3 slots, cluster has 2" and w.impossible


def test_disabled_slots_are_named_in_the_detail():
    w = _why([Agent("a", 4, disabled_slots=[2, 3])], [Task("t", "exp-1", 3, arrival=0)])["t"]
    assert w.impossible and "needs 3 slots, cluster has 2" == w.reason
    assert "2 slots disabled" in w.detail
    assert "until slots are enabled (det slot enable) or agents with more slots" in w.detail


def test_too_few_slots_without_disabled_ones_only_waits_for_agents():
    w = _why([Agent("a", 2)], [Task("t", "exp-1", 3, arrival=0)])["t"]
    assert w.detail.endswith("It waits until agents with more slots join.")


def test_waiting_for_slots_held_by_other_experiments():
    agents = [Agent("a", 2)]
    running = _running((Task("r", "exp-7", 2, arrival=0, preemptible=False), [("a", [0, 1])]))
    w = _why(agents, [Task("t", "exp-1", 1, arrival=1)], running)["t"]
    assert w.reason == "waiting for 1 slot in use" and not w.impossible
    assert "experiment 7 (2 slots, weight 1)" in w.detail


def test_priority_policy_names_priorities_of_holders():
    agents = [Agent("a", 2)]
    running = _running((Task("r", "task-ab", 2, arrival=0, priority=1, preemptible=False),
                        [("a", [0, 1])]))
    policy = SchedulerPolicy(type="priority")
    w = _why(agents, [Task("t", "exp-1", 2, arrival=1, priority=50)], running, policy)["t"]
    assert "task ab (2 slots, priority 1)" in w.detail


def test_max_slots_of_the_experiment_reached():
    agents = [Agent("a", 8)]
    running = _running((Task("r", "exp-1", 2, arrival=0, max_slots=2), [("a", [0, 1])]))
    w = _why(agents, [Task("t", "exp-1", 2, arrival=1, max_slots=2)], running)["t"]
    assert w.reason == "max_slots reached (2/2)" and not w.impossible


def test_free_slots_but_behind_an_earlier_task_under_priority():
    # Strict FIFO: the 4-slot task blocks the 1-slot one although a slot is free.
    agents = [Agent("a", 4)]
    running = _running((Task("r", "exp-9", 3, arrival=0, preemptible=False), [("a", [0, 1, 2])]))
    pending = [Task("big", "exp-1", 4, arrival=1), Task("small", "exp-2", 1, arrival=2)]
    waits = _why(agents, pending, running, SchedulerPolicy(type="priority"))
    assert waits["big"].reason == "waiting for 3 slots in use"
    assert waits["small"].reason == "waiting its turn" and "priority" in waits["small"].detail


def test_reasons_fit_an_80_column_table():
    agents = [Agent("a", 2, label="x")]
    cases = [_why([], [Task("t", "exp-1", 1, arrival=0)]),
             _why(agents, [Task("t", "exp-1", 100000, arrival=0, agent_label="x")]),
             _why(agents, [Task("t", "exp-1", 1, arrival=0, agent_label="a-long-label")])]
    for waits in cases:
        assert len(waits["t"].reason) <= 40, waits["t"].reason
