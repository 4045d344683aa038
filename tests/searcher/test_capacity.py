"""Automatic concurrency (``max_concurrent_trials: 0``) follows the capacity the driver
reports (``Searcher.on_capacity_changed``): ASHA with one slot no longer trains every
first-rung trial before its first promotion."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from determined.searcher import Create, Searcher, make_searcher, simulate

from ._helpers import curve, make_config

ASHA = dict(max_trials=64, max_length={"batches": 1024}, divisor=4.0, max_rungs=3)


def creates(result) -> Dict[int, Dict[str, Any]]:
    return {op.request_id: op.hparams for op in result.op_log if isinstance(op, Create)}


def run_logged(config, **kw):
    order: List[int] = []

    def metric(hp, units, seed):
        order.append(units)
        return curve(hp, units, seed)

    return simulate(config, metric, **kw), order


@pytest.mark.parametrize("capacity", [1, 3, 8])
def test_asha_with_capacity_runs_as_if_max_concurrent_trials_were_set(capacity: int) -> None:
    auto = simulate(make_config("adaptive_asha", **ASHA), curve, concurrency=capacity,
                    capacity=capacity)
    explicit = simulate(make_config("adaptive_asha", max_concurrent_trials=capacity, **ASHA),
                        curve, concurrency=capacity)
    assert auto.to_dict() == explicit.to_dict()


def test_one_slot_promotes_early_instead_of_training_every_first_rung() -> None:
    config = make_config("adaptive_asha", **ASHA)
    blind, blind_order = run_logged(config, concurrency=1)
    told, told_order = run_logged(config, concurrency=1, capacity=1)
    first_top = lambda order: order.index(1024)  # noqa: E731
    # Without the capacity, the 17 trials per bracket of the automatic default all
    # train their first rung before any promotion; with it, about one per bracket.
    assert first_top(blind_order) >= 30
    assert first_top(told_order) <= 12
    assert told.shutdown is not None and not told.shutdown.failure


def test_random_sampler_hparams_do_not_depend_on_capacity() -> None:
    for name, kw in [("adaptive_asha", ASHA), ("random", dict(max_trials=12)),
                     ("adaptive_simple", dict(max_trials=30, divisor=2.0, max_rungs=3)),
                     ("adaptive", dict(budget={"batches": 600}, divisor=2.0, max_rungs=3))]:
        config = make_config(name, **kw)
        base = simulate(config, curve)
        told = simulate(config, curve, concurrency=2, capacity=2)
        assert creates(told) == creates(base), name
        if name != "adaptive_asha":  # the same plan: the same trials train as long
            assert sorted(t.trained_units for t in told.trials.values()) == sorted(
                t.trained_units for t in base.trials.values()), name


@pytest.mark.parametrize("name,kw", [
    ("adaptive_asha", ASHA),
    ("random", dict(max_trials=12)),
    ("adaptive_simple", dict(max_trials=30, divisor=2.0, max_rungs=3)),
])
def test_open_trials_follow_capacity_changes(name: str, kw: Dict[str, Any]) -> None:
    s = make_searcher(make_config(name, **kw))
    assert s.on_capacity_changed(2) == []  # before start: only remembered
    ops = s.start()
    first = [op.request_id for op in ops if isinstance(op, Create)]
    assert len(first) == 2
    grown = s.on_capacity_changed(5)
    assert len([op for op in grown if isinstance(op, Create)]) == 3
    assert s.on_capacity_changed(5) == []
    s.on_capacity_changed(1)
    # Shrunk: finishing the first trial's work creates no new trial (4 others have work).
    rid = first[0]
    s.on_trial_created(rid)
    ops = s.on_validation_completed(rid, {"validation_error": 0.5})
    assert not [op for op in ops if isinstance(op, Create)]
    snap = json.loads(json.dumps(s.snapshot()))
    assert snap["capacity"] == 1
    assert Searcher.restore(make_config(name, **kw), snap).snapshot() == snap


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_capacity_changes_restore_exactly(sampler: str) -> None:
    config = make_config("adaptive_asha", sampler=sampler, **ASHA)
    plan = {20: 4, 60: 1, 90: 3}
    once = simulate(config, curve, concurrency=2, capacity=2, capacity_at=plan, shuffle_seed=1)
    again = simulate(config, curve, concurrency=2, capacity=2, capacity_at=plan, shuffle_seed=1,
                     restore_at=range(1, once.events, 4))
    assert once.shutdown is not None and not once.shutdown.failure
    assert again.to_dict() == once.to_dict()


def test_capacity_is_ignored_with_an_explicit_limit() -> None:
    config = make_config("adaptive_asha", max_concurrent_trials=2, **ASHA)
    assert simulate(config, curve, concurrency=1, capacity=1).to_dict() == simulate(
        config, curve, concurrency=1).to_dict()
    with pytest.raises(ValueError, match="capacity"):
        make_searcher(config).on_capacity_changed(0)
