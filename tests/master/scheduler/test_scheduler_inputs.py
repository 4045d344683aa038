"""Constructors and ``schedule`` reject malformed input with clear messages; exports."""

import pytest

import determined.master.scheduler as scheduler
from determined.master.scheduler import Agent, Allocation, Decision, SchedulerPolicy, Task, schedule


def test_exports_match_public_names():
    public = {name for name in vars(scheduler) if not name.startswith("_")}
    modules = {name for name, value in vars(scheduler).items() if type(value) is type(scheduler)}
    assert set(scheduler.__all__) == public - modules


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"type": "fifo"}, "Expected SchedulerPolicy type to be one of fair_share, priority. Received: type='fifo'"),
        ({"fit": "first"}, "Expected SchedulerPolicy fit to be one of best, worst. Received: fit='first'"),
    ],
)
def test_policy_rejects_unknown_values(kwargs, message):
    with pytest.raises(ValueError) as info:
        SchedulerPolicy(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"slots_needed": 0}, "slots_needed to be an int >= 1. Received: slots_needed=0"),
        ({"slots_needed": True}, "Received: slots_needed=True"),
        ({"weight": 0}, "weight to be a finite number > 0. Received: weight=0"),
        ({"weight": float("inf")}, "Received: weight=inf"),
        ({"max_slots": 0}, "max_slots to be an int >= 1. Received: max_slots=0"),
        ({"priority": 1.5}, "priority to be an int. Received: priority=1.5"),
        ({"arrival": "now"}, "arrival to be an int. Received: arrival='now'"),
        ({"id": ""}, "Expected Task id to be a non-empty str. Received: id=''"),
        ({"preemptible": 1}, "preemptible to be a bool"),
    ],
)
def test_task_rejects_bad_fields(kwargs, fragment):
    fields = {"id": "t", "group": "g", "slots_needed": 1, "arrival": 0, **kwargs}
    with pytest.raises(ValueError, match="Expected") as info:
        Task(**fields)
    assert fragment in str(info.value)


def test_agent_checks_fields():
    with pytest.raises(ValueError, match=r"slots to be an int >= 0. Received: slots=-1"):
        Agent("a", -1)
    with pytest.raises(ValueError, match=r"disabled_slots to be slot indices in \[0, 2\). Received: 2"):
        Agent("a", 2, disabled_slots=[2])
    agent = Agent("a", 3, disabled_slots=[1])
    assert agent.disabled_slots == frozenset({1}) and agent.usable_slots == (0, 2)
    assert Agent("a", 3, enabled=False).usable_slots == ()


def test_allocation_normalizes_and_checks_parts():
    allocation = Allocation("t", [["a", [1, 0]]])
    assert allocation.parts == (("a", (0, 1)),) and allocation.slot_count == 2
    for parts, fragment in [
        ([], "at least one part"),
        ([("a", [])], "non-empty set"),
        ([("a", [0, 0])], "distinct"),
        ([("a", [0]), ("a", [1])], "each agent once"),
        ([("a", [-1])], "ints >= 0"),
        ("ab", "(agent_id, slots) pairs"),
    ]:
        with pytest.raises(ValueError, match="Expected Allocation of task 't'") as info:
            Allocation("t", parts)
        assert fragment in str(info.value)


def test_decision_defaults_are_independent():
    first, second = Decision(), Decision()
    first.start.append(Allocation("t", [("a", [0])]))
    assert second.start == [] and second.is_empty and not first.is_empty


def _running(task: Task, *parts) -> dict:
    return {task.id: (task, Allocation(task.id, list(parts)))}


@pytest.mark.parametrize(
    "agents, pending, running, fragment",
    [
        ([Agent("a", 1), Agent("a", 2)], [], {}, "unique agent ids. Received: 'a' twice"),
        ([], [Task("t", "g", 1, 0), Task("t", "g", 1, 1)], {}, "unique task ids. Received: 't' twice"),
        (
            [Agent("a", 2)],
            [Task("t", "g", 1, 0)],
            _running(Task("t", "g", 1, 0), ("a", [0])),
            "unique task ids",
        ),
        (
            [],
            [Task("t1", "g", 1, 0, weight=1.0), Task("t2", "g", 1, 1, weight=2.0)],
            {},
            "same weight. Received: 't1' has weight=1.0, 't2' has weight=2.0",
        ),
        (
            [Agent("a", 2)],
            [],
            _running(Task("t", "g", 2, 0), ("a", [0])),
            "to hold slots_needed=2 slots. Received: 1 slots",
        ),
        (
            [Agent("a", 2)],
            [],
            _running(Task("t", "g", 1, 0), ("a", [5])),
            "slots of agent 'a' in [0, 2). Received: slot 5",
        ),
        (
            [Agent("a", 2)],
            [],
            {"x": (Task("t", "g", 1, 0), Allocation("t", [("a", [0])]))},
            "running keys to match task and allocation ids",
        ),
        ([], [], {"t": "nonsense"}, "Expected running['t'] to be (Task, Allocation)"),
        (["a"], [], {}, "Expected agents to be Agent instances"),
    ],
)
def test_schedule_rejects_inconsistent_input(agents, pending, running, fragment):
    with pytest.raises(ValueError) as info:
        schedule(agents, pending, running)
    assert fragment in str(info.value)


def test_schedule_rejects_overlapping_running_allocations():
    running = {}
    running.update(_running(Task("t1", "g", 1, 0), ("a", [0])))
    running.update(_running(Task("t2", "h", 1, 1), ("a", [0])))
    with pytest.raises(ValueError, match="disjoint slots. Received: slot 0 of agent 'a' held by 't1' and 't2'"):
        schedule([Agent("a", 2)], [], running)


def test_schedule_rejects_a_non_policy():
    with pytest.raises(ValueError, match="Expected policy to be a SchedulerPolicy. Received: policy='priority'"):
        schedule([], [], {}, "priority")


def test_schedule_does_not_mutate_its_arguments():
    agents = [Agent("a", 2)]
    pending = [Task(f"t{i}", "g", 1, i) for i in range(4)]
    running = _running(Task("r", "h", 1, 0), ("a", [0]))
    before = (list(agents), list(pending), dict(running))
    schedule(agents, pending, running)
    assert (agents, pending, running) == before


def test_empty_cluster_decides_nothing():
    assert schedule([], [Task("t", "g", 1, 0)], {}).is_empty
    assert schedule([Agent("a", 0)], [], {}).is_empty
