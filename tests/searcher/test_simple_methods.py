"""single, random and grid driven by the simulator and by hand."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from determined.config import Length
from determined.searcher import Close, Create, Shutdown, Train, Validate, make_searcher, simulate

from ._helpers import METRIC, SPACE, curve, make_config, op_dicts


def test_single_runs_one_trial_to_max_length() -> None:
    result = simulate(make_config("single"), curve)
    assert [type(op).__name__ for op in result.op_log] == [
        "Create", "Train", "Validate", "Close", "Shutdown"
    ]
    (trial,) = result.trials.values()
    assert trial.train_lengths == [64] and trial.closed and len(trial.validations) == 1
    assert result.shutdown == Shutdown()
    assert result.progress[-1] == 1.0


def test_random_creates_max_trials_up_front_by_default() -> None:
    s = make_searcher(make_config("random", max_trials=5))
    ops = s.start()
    assert [op.request_id for op in ops if isinstance(op, Create)] == [1, 2, 3, 4, 5]
    assert ops[:3] == [ops[0], Train(1, Length.from_dict({"batches": 64})), Validate(1)]
    seeds = [op.trial_seed for op in ops if isinstance(op, Create)]
    assert all(0 <= seed < 2**31 for seed in seeds) and len(set(seeds)) == 5


def test_random_with_concurrency_creates_trials_as_others_close() -> None:
    s = make_searcher(make_config("random", max_trials=3, max_concurrent_trials=2))
    ops = s.start()
    assert [op.request_id for op in ops if isinstance(op, Create)] == [1, 2]
    for rid in (1, 2):
        s.on_trial_created(rid)
    assert s.on_validation_completed(1, {METRIC: 0.2}) == [Close(1)]
    ops = s.on_trial_closed(1)
    assert [type(op) for op in ops] == [Create, Train, Validate] and ops[0].request_id == 3
    s.on_trial_created(3)
    s.on_validation_completed(2, {METRIC: 0.1})
    assert s.on_trial_closed(2) == []  # all three created already
    s.on_validation_completed(3, {METRIC: 0.3})
    assert s.on_trial_closed(3) == [Shutdown()]
    assert s.progress() == 1.0


def test_random_progress_counts_validated_units() -> None:
    s = make_searcher(make_config("random", max_trials=4))
    s.start()
    s.on_validation_completed(1, {METRIC: 0.2})
    assert s.progress() == 0.25


@settings(max_examples=25, deadline=None, database=None)
@given(concurrency=st.integers(0, 3), shuffle=st.one_of(st.none(), st.integers(0, 1000)),
       limit=st.integers(0, 4))
def test_random_runs_every_trial_once_under_any_schedule(concurrency, shuffle, limit) -> None:
    config = make_config("random", max_trials=7, max_concurrent_trials=limit)
    result = simulate(config, curve, concurrency=concurrency, shuffle_seed=shuffle)
    assert len(result.trials) == 7 and result.total_units == 7 * 64
    assert all(t.closed and t.train_lengths == [64] for t in result.trials.values())
    assert result.shutdown == Shutdown()
    # Hparams and seeds come from the RNG in creation order, whatever the schedule.
    creates = [op for op in op_dicts(result) if op["type"] == "create"]
    assert creates == [op for op in op_dicts(simulate(config, curve)) if op["type"] == "create"]


def _expected_values(spec):
    """SPEC grid rules, written independently of the implementation."""
    kind = spec["type"]
    if kind == "const":
        return [spec["val"]]
    if kind == "categorical":
        return list(spec["vals"])
    lo, hi, count = spec["minval"], spec["maxval"], spec["count"]
    if kind == "int":
        c = min(count, hi - lo + 1)
        pts = [(lo + hi) / 2] if c == 1 else [lo + i * (hi - lo) / (c - 1) for i in range(c)]
        return [int(p + 0.5) if p >= 0 else -int(-p + 0.5) for p in pts]
    if count == 1:
        pts = [(lo + hi) / 2]
    else:
        pts = [lo + i * (hi - lo) / (count - 1) for i in range(count)]
    return pts if kind == "double" else [spec["base"] ** p for p in pts]


def _flatten(hp, prefix=()):
    for k, v in hp.items():
        if isinstance(v, dict):
            yield from _flatten(v, prefix + (k,))
        else:
            yield prefix + (k,), v


leaf_specs = st.one_of(
    st.builds(lambda v: {"type": "const", "val": v}, st.integers(-5, 5)),
    st.builds(lambda vals: {"type": "categorical", "vals": vals},
              st.lists(st.sampled_from(["a", "b", "c", 1, 2.5]), min_size=1, max_size=3)),
    st.builds(lambda lo, w, c: {"type": "int", "minval": lo, "maxval": lo + w, "count": c},
              st.integers(-20, 20), st.integers(0, 10), st.integers(1, 4)),
    st.builds(lambda lo, w, c: {"type": "double", "minval": lo, "maxval": lo + w, "count": c},
              st.floats(-5, 5), st.floats(0.1, 5), st.integers(1, 3)),
    st.builds(lambda lo, c: {"type": "log", "base": 10.0, "minval": lo, "maxval": lo + 2,
                             "count": c},
              st.floats(-5, 0), st.integers(1, 3)),
)
spaces = st.dictionaries(
    st.sampled_from(["alpha", "beta", "gamma", "delta"]),
    st.one_of(leaf_specs, st.dictionaries(st.sampled_from(["x", "y"]), leaf_specs, min_size=1)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None, database=None)
@given(space=spaces, shuffle=st.one_of(st.none(), st.integers(0, 100)))
def test_grid_trials_are_exactly_the_product_of_value_lists(space, shuffle) -> None:
    config = make_config("grid", space=space, max_length={"records": 100})
    result = simulate(config, lambda hp, units, seed: 0.5, shuffle_seed=shuffle, concurrency=2)
    leaves = []

    def walk(node, prefix=()):
        for name in sorted(node):
            spec = node[name]
            if "type" in spec:
                leaves.append((prefix + (name,), spec))
            else:
                walk(spec, prefix + (name,))

    walk(space)
    expected = [
        tuple(combo) for combo in itertools.product(*[_expected_values(s) for _, s in leaves])
    ]
    got = [
        tuple(v for _, v in sorted(_flatten(t.hparams)))
        for _, t in sorted(result.trials.items())
    ]
    assert [tuple(map(repr, g)) for g in got] == [tuple(map(repr, e)) for e in expected]
    assert all(t.train_lengths == [100] and t.closed for t in result.trials.values())
    assert result.shutdown == Shutdown()


def test_grid_with_the_example_space() -> None:
    result = simulate(make_config("grid"), curve)
    # lr 3 x n_hidden 2 x dropout 2 x act 2 x momentum 2 = 48 trials.
    assert len(result.trials) == 48
    assert {t.hparams["optimizer"]["name"] for t in result.trials.values()} == {"sgd"}
    assert SPACE["lr"]["count"] == 3
