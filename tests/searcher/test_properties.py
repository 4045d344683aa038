"""Properties every method keeps: determinism, snapshot/restore, lengths, failure rule."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.searcher import (
    Close,
    Create,
    ExitedReason,
    Searcher,
    Shutdown,
    Train,
    Validate,
    make_searcher,
    simulate,
)

from ._helpers import METRIC, curve, make_config, op_dicts

CONFIGS = {
    "single": dict(),
    "random": dict(max_trials=6, max_concurrent_trials=2),
    "grid": dict(max_concurrent_trials=5),
    "adaptive_asha": dict(max_trials=24, divisor=2.0, max_rungs=4),
    "asha_stop_once": dict(max_trials=24, divisor=2.0, max_rungs=4, stop_once=True),
    "adaptive_simple": dict(max_trials=20, divisor=2.0, max_rungs=3, mode="conservative"),
    "adaptive": dict(budget={"batches": 600}, divisor=3.0, max_rungs=3),
    "pbt": dict(),
}


def config_for(key: str, seed: int = 12345):
    name = "adaptive_asha" if key == "asha_stop_once" else key
    return make_config(name, seed=seed, **CONFIGS[key])


def max_length_of(config) -> int:
    s = config["searcher"]
    if s["name"] == "pbt":
        return s["num_rounds"] * s["length_per_round"]["batches"]
    return s["max_length"]["batches"]


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_same_seed_same_ops_and_different_seed_different_trials(key) -> None:
    a = simulate(config_for(key), curve, shuffle_seed=5, concurrency=3)
    b = simulate(config_for(key), curve, shuffle_seed=5, concurrency=3)
    assert op_dicts(a) == op_dicts(b)
    c = simulate(config_for(key, seed=999), curve, shuffle_seed=5, concurrency=3)
    creates_a = [op for op in a.op_log if isinstance(op, Create)]
    creates_c = [op for op in c.op_log if isinstance(op, Create)]
    assert [op.trial_seed for op in creates_a] != [op.trial_seed for op in creates_c]
    assert all(0 <= op.trial_seed < 2**31 for op in creates_a + creates_c)
    if key != "grid":
        assert [op.hparams for op in creates_a] != [op.hparams for op in creates_c]
    else:
        assert [op.hparams for op in creates_a] == [op.hparams for op in creates_c]


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_every_method_finishes_cleanly(key) -> None:
    config = config_for(key)
    result = simulate(config, curve, shuffle_seed=11, concurrency=4)
    assert result.shutdown == Shutdown()
    assert isinstance(result.op_log[-1], Shutdown)
    assert all(t.closed for t in result.trials.values())
    assert all(max(t.train_lengths) <= max_length_of(config) for t in result.trials.values())
    assert all(0.0 <= p <= 1.0 for p in result.progress) and result.progress[-1] == 1.0
    json.dumps(result.to_dict())


@settings(max_examples=80, deadline=None, database=None)
@given(
    key=st.sampled_from(sorted(CONFIGS)),
    points=st.lists(st.integers(1, 400), min_size=1, max_size=3),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
    concurrency=st.integers(0, 4),
    exits=st.dictionaries(st.integers(1, 30), st.tuples(st.sampled_from(list(ExitedReason)),
                                                        st.integers(0, 3)), max_size=4),
)
def test_restore_from_any_snapshot_continues_identically(
    key, points, shuffle, concurrency, exits
) -> None:
    config = config_for(key)
    kwargs = dict(shuffle_seed=shuffle, concurrency=concurrency, exits=exits)
    plain = simulate(config, curve, **kwargs)
    points = [1 + (p - 1) % plain.events for p in points]
    restored = simulate(config, curve, restore_at=points, **kwargs)
    assert op_dicts(restored) == op_dicts(plain)
    assert restored.trials == plain.trials
    assert restored.progress == plain.progress


@settings(max_examples=30, deadline=None, database=None)
@given(key=st.sampled_from(sorted(CONFIGS)), steps=st.integers(0, 80), seed=st.integers(0, 100))
def test_restored_searcher_answers_events_like_the_original(key, steps, seed) -> None:
    """Drive a searcher by hand in a random order, snapshot after ``steps`` events, then
    feed the original and the restored copy the same events."""
    config = config_for(key)
    rng = random.Random(seed)
    original = make_searcher(config)
    queues = {}  # request id -> its ops not yet run, in order

    def enqueue(ops):
        for op in ops:
            if not isinstance(op, Shutdown):
                queues.setdefault(op.request_id, []).append(op)

    enqueue(original.start())
    copy = None
    for step in range(10_000):
        if step == steps:
            copy = Searcher.restore(config, json.loads(json.dumps(original.snapshot())))
        busy = sorted(rid for rid, ops in queues.items() if ops)
        if not busy:
            break
        op = queues[rid := busy[rng.randrange(len(busy))]].pop(0)
        if isinstance(op, Create):
            name, args = "on_trial_created", (rid,)
        elif isinstance(op, Validate):
            name, args = "on_validation_completed", (rid, {METRIC: rng.random()})
        elif isinstance(op, Close):
            name, args = "on_trial_closed", (rid,)
        else:
            continue
        out = getattr(original, name)(*args)
        if copy is not None:
            assert getattr(copy, name)(*args) == out
            assert copy.snapshot() == original.snapshot()
            assert copy.progress() == original.progress()
        enqueue(out)
    assert original.shutdown == Shutdown()


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_all_trials_erroring_ends_in_failure(key) -> None:
    exits = {rid: (ExitedReason.ERRORED, rid % 2) for rid in range(1, 2000)}
    result = simulate(config_for(key), curve, exits=exits)
    assert result.shutdown is not None and result.shutdown.failure
    n = len(result.trials)
    assert result.shutdown.reason == (f"all {n} trials failed with an error" if n > 1
                                      else "its only trial failed with an error")
    assert all(t.exited is ExitedReason.ERRORED for t in result.trials.values())


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_user_stops_do_not_count_as_failures(key) -> None:
    exits = {rid: ExitedReason.USER_REQUESTED_STOP for rid in range(1, 2000)}
    result = simulate(config_for(key), curve, exits=exits)
    assert result.shutdown == Shutdown()


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_one_healthy_trial_avoids_failure(key) -> None:
    exits = {rid: ExitedReason.ERRORED for rid in range(2, 2000)}
    result = simulate(config_for(key), curve, exits=exits)
    assert result.shutdown == Shutdown()
    assert result.trials[1].closed and result.trials[1].exited is None


@settings(max_examples=40, deadline=None, database=None)
@given(
    key=st.sampled_from(sorted(CONFIGS)),
    max_length=st.integers(1, 150),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_no_trial_trains_past_max_length(key, max_length, shuffle) -> None:
    config = config_for(key)
    if config["searcher"]["name"] == "pbt":
        config["searcher"]["length_per_round"] = {"batches": max_length}
    else:
        config["searcher"]["max_length"] = {"batches": max_length}
        if "budget" in config["searcher"]:
            config["searcher"]["budget"] = {"batches": max_length * 8}
    result = simulate(config, curve, shuffle_seed=shuffle, concurrency=3)
    limit = max_length_of(config)
    for op in result.op_log:
        if isinstance(op, Train):
            assert 1 <= op.length.units <= limit
    assert result.shutdown is not None
