"""Lifecycle transitions (SPEC 1.4): the pure table, and the store enforcing it."""

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.engine import ExperimentState
from determined.master.db import (
    EXPERIMENT_TRANSITIONS,
    IllegalTransitionError,
    Store,
    check_transition,
)

EXPERIMENT_STATES = sorted(EXPERIMENT_TRANSITIONS)

LEGAL = {
    ("ACTIVE", "PAUSED"), ("PAUSED", "ACTIVE"),
    ("ACTIVE", "STOPPING_COMPLETED"), ("ACTIVE", "STOPPING_CANCELED"), ("ACTIVE", "STOPPING_ERROR"),
    ("PAUSED", "STOPPING_COMPLETED"), ("PAUSED", "STOPPING_CANCELED"), ("PAUSED", "STOPPING_ERROR"),
    ("STOPPING_COMPLETED", "COMPLETED"), ("STOPPING_CANCELED", "CANCELED"),
    ("STOPPING_ERROR", "ERROR"),
    ("STOPPING_COMPLETED", "STOPPING_ERROR"), ("STOPPING_CANCELED", "STOPPING_ERROR"),
}


def test_the_store_knows_every_state_the_engine_sets() -> None:
    assert EXPERIMENT_STATES == sorted(state.value for state in ExperimentState)


@pytest.mark.parametrize("src", EXPERIMENT_STATES)
@pytest.mark.parametrize("dst", EXPERIMENT_STATES)
def test_experiment_transition_table(src: str, dst: str) -> None:
    if src == dst:
        assert check_transition("experiment", 1, src, dst) is False
    elif (src, dst) in LEGAL:
        assert check_transition("experiment", 1, src, dst) is True
    else:
        with pytest.raises(IllegalTransitionError) as info:
            check_transition("experiment", 1, src, dst)
        assert f"{src} -> {dst}" in str(info.value)
        assert (info.value.from_state, info.value.to_state) == (src, dst)


def test_unknown_state_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Received: state='RUNNING'"):
        check_transition("experiment", 1, "ACTIVE", "RUNNING")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(EXPERIMENT_STATES), max_size=12))
def test_random_walks_never_leave_a_terminal_state(requests) -> None:
    state = "PAUSED"
    for wanted in requests:
        try:
            check_transition("experiment", 1, state, wanted)
        except IllegalTransitionError:
            continue
        assert state not in ("COMPLETED", "CANCELED", "ERROR") or wanted == state
        state = wanted


def test_store_walks_the_lifecycle(store: Store, make_experiment) -> None:
    exp = make_experiment()
    assert store.get_experiment(exp).state == "PAUSED"
    for state in ("ACTIVE", "PAUSED", "ACTIVE", "STOPPING_COMPLETED"):
        assert store.set_experiment_state(exp, state).state == state
        assert store.get_experiment(exp).end_time is None
    done = store.set_experiment_state(exp, "COMPLETED")
    assert done.state == "COMPLETED" and done.end_time is not None
    assert store.set_experiment_state(exp, "COMPLETED").end_time == done.end_time  # no-op


@pytest.mark.parametrize(
    "path, illegal",
    [
        ((), "COMPLETED"),
        (("ACTIVE",), "ERROR"),
        (("STOPPING_CANCELED",), "ACTIVE"),
        (("STOPPING_CANCELED",), "COMPLETED"),
        (("STOPPING_ERROR", "ERROR"), "ACTIVE"),
        (("STOPPING_CANCELED", "CANCELED"), "PAUSED"),
    ],
)
def test_store_rejects_illegal_experiment_transitions(
    store: Store, make_experiment, path, illegal
) -> None:
    exp = make_experiment()
    for state in path:
        store.set_experiment_state(exp, state)
    before = store.get_experiment(exp)
    with pytest.raises(IllegalTransitionError) as info:
        store.set_experiment_state(exp, illegal)
    message = str(info.value)
    assert f"experiment {exp}" in message and f"{before.state} -> {illegal}" in message
    assert store.get_experiment(exp) == before


def test_terminal_end_time_can_be_given(store: Store, make_experiment) -> None:
    exp = make_experiment()
    store.set_experiment_state(exp, "STOPPING_ERROR")
    when = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert store.set_experiment_state(exp, "ERROR", end_time=when).end_time == when
    with pytest.raises(ValueError, match="end_time"):
        store.set_experiment_state(make_experiment(), "ACTIVE", end_time=when)


def test_store_trial_transitions(store: Store, trial_id: int) -> None:
    assert store.get_trial(trial_id).state == "ACTIVE"
    with pytest.raises(ValueError, match="STOPPING_CANCELED"):
        store.update_trial(trial_id, state="STOPPING_CANCELED")
    assert store.update_trial(trial_id, state="PAUSED").state == "PAUSED"  # its experiment's
    assert store.update_trial(trial_id, state="ACTIVE").state == "ACTIVE"
    done = store.update_trial(trial_id, state="CANCELED")
    assert done.state == "CANCELED" and done.end_time is not None
    with pytest.raises(IllegalTransitionError, match=f"trial {trial_id}: CANCELED -> ACTIVE"):
        store.update_trial(trial_id, state="ACTIVE")
    with pytest.raises(IllegalTransitionError, match="CANCELED -> COMPLETED"):
        store.update_trial(trial_id, state="COMPLETED")


def test_store_checkpoint_transitions(store: Store, trial_id: int) -> None:
    store.add_checkpoint("c1", trial_id, 10, {}, {}, "torch-2", "cloudpickle", state="ACTIVE")
    assert store.get_checkpoint("c1").end_time is None
    done = store.set_checkpoint_state("c1", "COMPLETED")
    assert done.state == "COMPLETED" and done.end_time is not None
    assert store.set_checkpoint_state("c1", "DELETED").state == "DELETED"
    with pytest.raises(IllegalTransitionError, match="checkpoint c1: DELETED -> COMPLETED"):
        store.set_checkpoint_state("c1", "COMPLETED")
    store.add_checkpoint("c2", trial_id, 20, {}, {}, "torch-2", "cloudpickle", state="ERROR")
    with pytest.raises(IllegalTransitionError, match="ERROR -> DELETED"):
        store.set_checkpoint_state("c2", "DELETED")


def test_a_refused_transition_says_what_the_state_allows_in_words() -> None:
    with pytest.raises(IllegalTransitionError) as info:
        check_transition("experiment", 3, "COMPLETED", "PAUSED")
    assert str(info.value) == ("experiment 3: COMPLETED -> PAUSED is not allowed; "
                               "experiment 3 is COMPLETED, which has ended (a final state)")
    with pytest.raises(IllegalTransitionError) as info:
        check_transition("experiment", 3, "PAUSED", "COMPLETED")
    assert str(info.value).startswith("experiment 3: PAUSED -> COMPLETED is not allowed; "
                                      "experiment 3 is PAUSED, which can become ")
