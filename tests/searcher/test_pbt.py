"""pbt: rounds, truncation, cloning from checkpoints, explore, exits."""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from determined.config import Length
from determined.searcher import (
    Checkpoint,
    Close,
    Create,
    ExitedReason,
    Shutdown,
    Train,
    Validate,
    explore,
    make_searcher,
    simulate,
)

from ._helpers import METRIC, curve, make_config, noisy

SPACE = {
    "x": {"type": "double", "minval": 0.0, "maxval": 1.0, "count": None},
    "n": {"type": "int", "minval": 1, "maxval": 100, "count": None},
    "lr": {"type": "log", "base": 10.0, "minval": -4.0, "maxval": -1.0, "count": None},
    "act": {"type": "categorical", "vals": ["relu", "tanh", "gelu"]},
    "k": {"type": "const", "val": "fixed"},
}


def _pbt(**fields):
    base = dict(population_size=4, num_rounds=3, length_per_round={"batches": 10},
                replace_function={"truncate_fraction": 0.5},
                explore_function={"resample_probability": 0.0, "perturb_factor": 0.2})
    base.update(fields)
    return make_config("pbt", space=SPACE, **base)


def _b(n):
    return Length.from_dict({"batches": n})


def test_round_truncates_worst_and_clones_best_from_checkpoints() -> None:
    s = make_searcher(_pbt())
    ops = s.start()
    assert [type(op) for op in ops] == [Create, Train, Validate] * 4
    assert ops[1] == Train(1, _b(10))
    assert s.on_validation_completed(1, {METRIC: 0.4}) == []
    assert s.on_validation_completed(2, {METRIC: 0.1}) == []
    assert s.on_validation_completed(3, {METRIC: 0.2}) == []
    ops = s.on_validation_completed(4, {METRIC: 0.2})  # ties broken by request id: 3 before 4
    # Ranking 2, 3, 4, 1: close 4 and 1; clone 2 and 3; survivors train to 20 in total.
    assert ops[:3] == [Close(4), Close(1), Checkpoint(2)]
    child5, child6 = ops[3], ops[7]
    assert isinstance(child5, Create) and child5.request_id == 5 and child5.checkpoint_of == 2
    assert ops[4:7] == [Train(5, _b(10)), Validate(5), Checkpoint(3)]
    assert isinstance(child6, Create) and child6.request_id == 6 and child6.checkpoint_of == 3
    assert ops[8:] == [Train(6, _b(10)), Validate(6), Train(2, _b(20)), Validate(2),
                       Train(3, _b(20)), Validate(3)]
    parent = s.trial_hparams(2)
    f = 0.2
    assert child5.hparams["x"] in (min(1.0, parent["x"] * (1 + f)), parent["x"] * (1 - f))
    assert child5.hparams["n"] in (
        min(100, math.ceil(round(parent["n"] * (1 + f), 9))),
        max(1, math.floor(round(parent["n"] * (1 - f), 9))),
    )
    assert child5.hparams["lr"] in (min(0.1, parent["lr"] * (1 + f)),
                                    max(1e-4, parent["lr"] * (1 - f)))
    assert child5.hparams["act"] == parent["act"] and child5.hparams["k"] == "fixed"
    assert s.method.members == [2, 3, 5, 6]
    for rid in (5, 6, 2):
        assert s.on_validation_completed(rid, {METRIC: 0.3}) == []
    assert s.on_validation_completed(3, {METRIC: 0.3}) != []
    assert s.method.rounds_done == 2


def test_last_round_closes_everyone() -> None:
    s = make_searcher(_pbt(num_rounds=1))
    s.start()
    for rid in (1, 2, 3):
        assert s.on_validation_completed(rid, {METRIC: rid}) == []
    assert s.on_validation_completed(4, {METRIC: 0}) == [Close(1), Close(2), Close(3), Close(4)]
    for rid in (1, 2, 3):
        s.on_trial_closed(rid)
    assert s.on_trial_closed(4) == [Shutdown()]


def test_larger_is_better_keeps_the_largest() -> None:
    s = make_searcher(_pbt(smaller_is_better=False))
    s.start()
    for rid, m in [(1, 0.4), (2, 0.1), (3, 0.3)]:
        s.on_validation_completed(rid, {METRIC: m})
    ops = s.on_validation_completed(4, {METRIC: 0.2})
    assert ops[:2] == [Close(4), Close(2)] and ops[2] == Checkpoint(1)


def test_population_stays_constant_with_exits() -> None:
    s = make_searcher(_pbt(replace_function={"truncate_fraction": 0.25}))  # k = 1
    s.start()
    s.on_trial_exited_early(3, ExitedReason.ERRORED)
    s.on_validation_completed(1, {METRIC: 0.1})
    s.on_validation_completed(2, {METRIC: 0.2})
    ops = s.on_trial_exited_early(4, ExitedReason.USER_REQUESTED_STOP)
    # Ranked 1, 2, 3(dead), 4(dead): 4 is truncated (no Close: it exited); dead 3 is
    # replaced too, parents cycling through live survivors best first: 1, then 2.
    creates = [op for op in ops if isinstance(op, Create)]
    assert [(c.request_id, c.checkpoint_of) for c in creates] == [(5, 1), (6, 2)]
    assert not any(isinstance(op, Close) for op in ops)
    assert s.method.members == [1, 2, 5, 6]
    assert Train(1, _b(20)) in ops and Train(2, _b(20)) in ops


pbt_settings = dict(
    population=st.integers(1, 8),
    rounds=st.integers(1, 5),
    fraction=st.sampled_from([0.0, 0.1, 0.25, 0.34, 0.5]),
    resample=st.floats(0.0, 1.0),
    perturb=st.floats(0.0, 1.0),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
    concurrency=st.integers(0, 3),
    exit_ops=st.lists(st.tuples(st.sampled_from(list(ExitedReason)), st.integers(0, 4)),
                      max_size=7),
    exit_targets=st.lists(st.integers(1, 40), max_size=7, unique=True),
)


@settings(max_examples=60, deadline=None, database=None)
@given(**pbt_settings)
def test_pbt_population_is_constant_and_children_warm_start(
    population, rounds, fraction, resample, perturb, shuffle, concurrency, exit_ops, exit_targets
) -> None:
    exits = dict(zip(exit_targets[: population - 1], exit_ops))  # never all members at once
    config = _pbt(population_size=population, num_rounds=rounds,
                  replace_function={"truncate_fraction": fraction},
                  explore_function={"resample_probability": resample, "perturb_factor": perturb})
    result = simulate(config, noisy, shuffle_seed=shuffle, concurrency=concurrency, exits=exits)
    assert result.shutdown is not None
    trains = [op for op in result.op_log if isinstance(op, Train)]
    validates = [op for op in result.op_log if isinstance(op, Validate)]
    assert len(trains) == len(validates) == population * rounds
    assert all(t.closed or t.exited for t in result.trials.values())
    for index, op in enumerate(result.op_log):
        if isinstance(op, Create) and op.checkpoint_of is not None:
            parent_ops = [
                o for o in result.op_log[:index]
                if getattr(o, "request_id", None) == op.checkpoint_of
            ]
            assert isinstance(parent_ops[-1], Checkpoint)
            child = result.trials[op.request_id]
            parent = result.trials[op.checkpoint_of]
            if child.exited is None:
                assert child.inherited_units in parent.checkpoints
    for t in result.trials.values():
        assert all(length % 10 == 0 for length in t.train_lengths)
        assert max(t.train_lengths, default=0) <= rounds * 10


@settings(max_examples=80, deadline=None, database=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    resample=st.floats(0.0, 1.0),
    perturb=st.floats(0.0, 1.0),
    n=st.integers(1, 100),
    x=st.floats(0.0, 1.0),
    e=st.floats(-4.0, -1.0),
    act=st.sampled_from(["relu", "tanh", "gelu"]),
)
def test_explore_stays_in_range(seed, resample, perturb, n, x, e, act) -> None:
    old = {"x": x, "n": n, "lr": 10.0**e, "act": act, "k": "fixed"}
    new = explore(SPACE, old, random.Random(seed), resample, perturb)
    assert set(new) == set(old)
    assert 1 <= new["n"] <= 100 and isinstance(new["n"], int)
    assert 0.0 <= new["x"] <= 1.0
    assert 1e-4 * (1 - 1e-9) <= new["lr"] <= 1e-1 * (1 + 1e-9)
    assert new["act"] in SPACE["act"]["vals"] and new["k"] == "fixed"
    if resample == 0.0:
        assert new["act"] == act
        assert new["x"] in (min(1.0, x * (1 + perturb)), x * (1 - perturb))
        up = min(100, math.ceil(round(n * (1 + perturb), 9)))
        down = max(1, math.floor(round(n * (1 - perturb), 9)))
        assert new["n"] in (up, down)


def test_explore_is_a_pure_function_of_its_rng() -> None:
    old = {"x": 0.5, "n": 50, "lr": 1e-3, "act": "relu", "k": "fixed"}
    a = explore(SPACE, old, random.Random(4), 0.3, 0.2)
    b = explore(SPACE, old, random.Random(4), 0.3, 0.2)
    assert a == b and old == {"x": 0.5, "n": 50, "lr": 1e-3, "act": "relu", "k": "fixed"}


def test_pbt_improves_the_population() -> None:
    config = make_config("pbt", population_size=10, num_rounds=6,
                         replace_function={"truncate_fraction": 0.3})
    result = simulate(config, curve, shuffle_seed=2)

    def badness(t):
        return abs(math.log10(t.hparams["lr"]) + 2.5)

    first = [badness(t) for t in result.trials.values() if t.request_id <= 10]
    last_create = max(i for i, op in enumerate(result.op_log) if isinstance(op, Create))
    final_ids = [op.request_id for op in result.op_log[last_create:] if isinstance(op, Close)]
    last_round = [result.trials[rid] for rid in final_ids]
    assert len(last_round) == 10
    assert len(result.trials) == 10 + 3 * 5
    assert sum(badness(t) for t in last_round) / len(last_round) < 0.7 * sum(first) / len(first)
