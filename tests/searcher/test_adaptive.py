"""adaptive (budget) and adaptive_simple: synchronous successive halving plans."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.config import Length
from determined.searcher import (
    Close,
    Create,
    ExitedReason,
    Shutdown,
    Train,
    Validate,
    make_searcher,
    simulate,
)

from ._helpers import METRIC, curve, make_config, noisy


@pytest.mark.parametrize(
    "mode, trials", [("aggressive", 64), ("standard", 43), ("conservative", 31)]
)
def test_spec_budget_example(mode, trials) -> None:
    config = make_config(
        "adaptive", max_length={"epochs": 16}, budget={"epochs": 160}, divisor=4.0,
        max_rungs=3, mode=mode,
    )
    result = simulate(config, curve)
    assert len(result.trials) == trials
    assert all(op.length.unit.value == "epochs" for op in result.op_log if isinstance(op, Train))
    assert result.total_units <= 160
    assert result.shutdown == Shutdown()


def _simple(**fields):
    base = dict(
        max_trials=4, divisor=2.0, mode="aggressive", max_rungs=2, max_length={"batches": 8}
    )
    base.update(fields)
    return make_config("adaptive_simple", **base)


def test_synchronous_promotions_and_rung_close() -> None:
    s = make_searcher(_simple())  # one bracket: 4 trials at 4 batches, 2 promoted to 8
    ops = s.start()
    assert [op.request_id for op in ops if isinstance(op, Create)] == [1, 2, 3, 4]
    assert ops[1:3] == [Train(1, Length.from_dict({"batches": 4})), Validate(1)]
    assert s.on_validation_completed(1, {METRIC: 0.5}) == []
    assert s.on_validation_completed(2, {METRIC: 0.3}) == []
    # k = 3 + 2 - 4 = 1: trial 3 ranks last, so the best (trial 2) is promoted.
    eight = Length.from_dict({"batches": 8})
    assert s.on_validation_completed(3, {METRIC: 0.9}) == [Train(2, eight), Validate(2)]
    # k = 2: trial 4 ranks first; the rung is complete, so the others close.
    assert s.on_validation_completed(4, {METRIC: 0.1}) == [
        Close(1), Close(3), Train(4, eight), Validate(4)
    ]
    assert s.on_validation_completed(2, {METRIC: 0.2}) == [Close(2)]
    assert s.on_validation_completed(4, {METRIC: 0.05}) == [Close(4)]
    for rid in (1, 3, 2):
        assert s.on_trial_closed(rid) == []
    assert s.on_trial_closed(4) == [Shutdown()]


def test_exited_waiting_trial_is_promoted_as_worst() -> None:
    s = make_searcher(_simple())
    s.start()
    s.on_validation_completed(1, {METRIC: 0.5})
    s.on_validation_completed(2, {METRIC: 0.3})
    assert s.on_trial_exited_early(2, ExitedReason.ERRORED) == []
    # Trial 2 (best) is promoted but exited: it reports the worst at the top rung, no work.
    assert s.on_validation_completed(3, {METRIC: 0.9}) == []
    assert s.on_validation_completed(4, {METRIC: 0.1}) == [
        Close(1), Close(3), Train(4, Length.from_dict({"batches": 8})), Validate(4)
    ]


def _plans_budget(max_length, budget, d, max_rungs, mode):
    rungs = {"aggressive": [max_rungs],
             "standard": list(range(max_rungs, (max_rungs - 1) // 2, -1)),
             "conservative": list(range(max_rungs, 0, -1))}[mode]
    share = budget // len(rungs)
    plans = []
    for r in rungs:
        lengths = [max(math.floor(max_length / d ** (r - 1 - i)), 1) for i in range(r)]
        base = [max(math.floor(d ** (r - 1 - i)), 1) for i in range(r)]
        cost = sum((lengths[i] - (lengths[i - 1] if i else 0)) * base[i] for i in range(r))
        starts = []
        for n in base:
            n = max(math.floor(share / cost * n), 1)
            starts.append(min(n, starts[-1]) if starts else n)
        plans.append((lengths, starts))
    return plans


def _plans_simple(max_length, max_trials, d, max_rungs, mode):
    rungs = {"aggressive": [max_rungs],
             "standard": list(range(max_rungs, (max_rungs - 1) // 2, -1)),
             "conservative": list(range(max_rungs, 0, -1))}[mode]
    per = [max_trials // len(rungs)] * len(rungs)
    for i in range(max_trials % len(rungs)):
        per[i] += 1
    per = [max(p, 1) for p in per]
    return [
        ([max(math.floor(max_length / d ** (r - 1 - i)), 1) for i in range(r)],
         [max(math.floor(t / d**i), 1) for i in range(r)])
        for r, t in zip(rungs, per)
    ]


def _cost(plans):
    return sum(
        sum((ls[i] - (ls[i - 1] if i else 0)) * ns[i] for i in range(len(ls))) for ls, ns in plans
    )


common = dict(
    max_length=st.integers(1, 200),
    divisor=st.sampled_from([1.5, 2.0, 3.0, 4.0]),
    max_rungs=st.integers(1, 4),
    mode=st.sampled_from(["aggressive", "standard", "conservative"]),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
    concurrency=st.integers(0, 3),
)


@settings(max_examples=40, deadline=None, database=None)
@given(extra_factor=st.floats(0.01, 30.0), **common)
def test_adaptive_runs_its_budget_plan(
    extra_factor, max_length, divisor, max_rungs, mode, shuffle, concurrency
) -> None:
    budget = max_length + max(1, int(extra_factor * max_length))
    config = make_config("adaptive", max_length={"batches": max_length}, budget={"batches": budget},
                         divisor=divisor, max_rungs=max_rungs, mode=mode)
    plans = _plans_budget(max_length, budget, divisor, max_rungs, mode)
    method = make_searcher(config).method
    assert [(b.lengths, b.starts) for b in method.brackets] == plans
    _check_plan_is_followed(config, plans, shuffle, concurrency)


@settings(max_examples=40, deadline=None, database=None)
@given(max_trials=st.integers(1, 80), **common)
def test_adaptive_simple_runs_its_trial_plan(
    max_trials, max_length, divisor, max_rungs, mode, shuffle, concurrency
) -> None:
    config = make_config("adaptive_simple", max_length={"batches": max_length},
                         max_trials=max_trials,
                         divisor=divisor, max_rungs=max_rungs, mode=mode)
    plans = _plans_simple(max_length, max_trials, divisor, max_rungs, mode)
    method = make_searcher(config).method
    assert [(b.lengths, b.starts) for b in method.brackets] == plans
    result = _check_plan_is_followed(config, plans, shuffle, concurrency)
    assert len(result.trials) == max(max_trials, len(plans))


def _check_plan_is_followed(config, plans, shuffle, concurrency):
    result = simulate(config, noisy, shuffle_seed=shuffle, concurrency=concurrency)
    assert result.shutdown == Shutdown()
    assert len(result.trials) == sum(starts[0] for _, starts in plans)
    assert result.total_units == _cost(plans)
    # Rung i of the whole search holds exactly sum(starts[i]) trials: count Train ops.
    depth = sorted(len(t.train_lengths) for t in result.trials.values())
    for i in range(max(len(ls) for ls, _ in plans)):
        assert sum(1 for d in depth if d > i) == sum(ns[i] for _, ns in plans if i < len(ns))
    max_length = config["searcher"]["max_length"]["batches"]
    assert all(max(t.train_lengths) <= max_length for t in result.trials.values())
    assert result.progress[-1] == 1.0
    return result


@settings(max_examples=30, deadline=None, database=None)
@given(
    name=st.sampled_from(["adaptive", "adaptive_simple"]),
    exits=st.dictionaries(st.integers(1, 30), st.tuples(st.sampled_from(list(ExitedReason)),
                                                        st.integers(0, 3)), max_size=10),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_adaptive_with_exits_finishes_within_plan(name, exits, shuffle) -> None:
    fields = {"budget": {"batches": 600}} if name == "adaptive" else {"max_trials": 30}
    config = make_config(name, max_length={"batches": 64}, divisor=2.0, max_rungs=4, **fields)
    plans = [(b.lengths, b.starts) for b in make_searcher(config).method.brackets]
    result = simulate(config, curve, shuffle_seed=shuffle, exits=exits, concurrency=3)
    assert result.shutdown is not None
    assert result.total_units <= _cost(plans)
    assert all(t.closed or t.exited for t in result.trials.values())
