"""adaptive_asha: exact promotions, bracket layout, budget bound, failures."""

import math
import statistics

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


def _batches(n: int) -> Length:
    return Length.from_dict({"batches": n})


def _tiny(**fields):
    # One bracket (aggressive) of 4 trials, divisor 2, rungs of 1, 2, 4 batches.
    base = dict(max_trials=4, divisor=2.0, mode="aggressive", max_length={"batches": 4})
    base.update(fields)
    return make_config("adaptive_asha", **base)


def test_promotions_follow_the_asynchronous_rule() -> None:
    s = make_searcher(_tiny())
    ops = s.start()
    assert [op.request_id for op in ops if isinstance(op, Create)] == [1, 2, 3, 4]
    assert ops[1:3] == [Train(1, _batches(1)), Validate(1)]
    for rid in (1, 2, 3, 4):
        assert s.on_trial_created(rid) == []
    # n=0: floor(1/2)=0 promotions due.
    assert s.on_validation_completed(1, {METRIC: 0.5}) == []
    # n=1: one due and trial 2 ranks first: promoted at once.
    assert s.on_validation_completed(2, {METRIC: 0.3}) == [Train(2, _batches(2)), Validate(2)]
    # n=2: still one due; trial 3 ranks last.
    assert s.on_validation_completed(3, {METRIC: 0.9}) == []
    # n=3: two due, trial 4 ranks first; then every trial has a rung-0 result and rung 0
    # has nothing outstanding, so its unpromoted trials close.
    assert s.on_validation_completed(4, {METRIC: 0.1}) == [
        Train(4, _batches(2)), Validate(4), Close(1), Close(3)
    ]
    assert s.on_validation_completed(2, {METRIC: 0.2}) == []
    assert s.on_validation_completed(4, {METRIC: 0.05}) == [
        Train(4, _batches(4)), Validate(4), Close(2)
    ]
    assert s.on_validation_completed(4, {METRIC: 0.01}) == [Close(4)]
    for rid in (1, 3, 2):
        assert s.on_trial_closed(rid) == []
    assert s.on_trial_closed(4) == [Shutdown()]


def test_late_promotion_of_an_earlier_trial() -> None:
    s = make_searcher(_tiny(max_length={"batches": 2}, max_trials=4))  # rungs 1, 2
    s.start()
    assert s.on_validation_completed(1, {METRIC: 0.1}) == []
    # n=1: one due; trial 2 is worse, so the best unpromoted (trial 1) goes up.
    assert s.on_validation_completed(2, {METRIC: 0.7}) == [Train(1, _batches(2)), Validate(1)]


def test_new_trials_are_created_when_an_event_gives_no_work() -> None:
    s = make_searcher(_tiny(max_trials=6, max_concurrent_trials=2))
    ops = s.start()
    assert [op.request_id for op in ops if isinstance(op, Create)] == [1, 2]
    ops = s.on_validation_completed(1, {METRIC: 0.5})
    assert [type(op) for op in ops] == [Create, Train, Validate] and ops[0].request_id == 3
    ops = s.on_validation_completed(2, {METRIC: 0.4})  # promoted: no new trial
    assert ops == [Train(2, _batches(2)), Validate(2)]


def test_stop_once_closes_unpromoted_trials_at_once() -> None:
    s = make_searcher(_tiny(stop_once=True))
    s.start()
    # The first result at a rung always continues (top max(floor(n/d), 1)).
    assert s.on_validation_completed(1, {METRIC: 0.5}) == [Train(1, _batches(2)), Validate(1)]
    assert s.on_validation_completed(2, {METRIC: 0.9}) == [Close(2)]
    assert s.on_validation_completed(3, {METRIC: 0.1}) == [Train(3, _batches(2)), Validate(3)]


def test_exited_trial_counts_as_worst_and_cascades_when_promoted() -> None:
    s = make_searcher(_tiny(max_length={"batches": 2}))  # rungs 1, 2
    s.start()
    assert s.on_validation_completed(1, {METRIC: 0.1}) == []
    # Trial 2 fails before reporting: a worst result at rung 0, which (n=1) promotes 1.
    assert s.on_trial_exited_early(2, ExitedReason.ERRORED) == [Train(1, _batches(2)), Validate(1)]
    assert s.on_validation_completed(3, {METRIC: 0.2}) == []
    # Trial 3 (waiting at rung 0) stops; trial 4's result makes two promotions due: trial 3
    # is promoted but gets no work; it reports the worst result at the top rung at once.
    assert s.on_trial_exited_early(3, ExitedReason.USER_REQUESTED_STOP) == []
    ops = s.on_validation_completed(4, {METRIC: 0.3})
    assert not any(isinstance(op, Train) for op in ops) and Close(4) in ops
    assert Close(3) not in ops and Close(2) not in ops


def _floor_log(n, d):
    k = 0
    while d ** (k + 1) <= n + 1e-9:
        k += 1
    return k


def expected_layout(max_length, max_trials, d, max_rungs, mode, mct):
    """SPEC 3 bracket layout, computed independently of the implementation."""
    m = min(max_rungs, _floor_log(max_length, d) + 1, _floor_log(max_trials, d) + 1)
    rungs = {"aggressive": [m], "standard": list(range((m - 1) // 2 + 1, m + 1)),
             "conservative": list(range(1, m + 1))}[mode]
    rungs = sorted(rungs, reverse=True)
    weights = [d ** (r - 1) / r for r in rungs]
    trials = [max(math.floor(w / sum(weights) * max_trials), 1) for w in weights]
    trials[0] += max(max_trials - sum(trials), 0)
    if mct == 0:
        conc = [max(trials[-1], math.floor(d))] * len(rungs)
    else:
        mct = max(mct, len(rungs))
        conc = [mct // len(rungs) + (1 if i < mct % len(rungs) else 0) for i in range(len(rungs))]
    lengths = [[max(math.floor(max_length / d ** (r - 1 - i)), 1) for i in range(r)] for r in rungs]
    return lengths, trials, conc


def budget_bound(lengths, trials, d, stop_once):
    """Most units ASHA can train: each rung result after the first ceil(d-1) may promote
    (stop_once: every result may continue), so rung i+1 gets at most that many trials."""
    total = 0
    for rung_lengths, n in zip(lengths, trials):
        prev = 0
        for length in rung_lengths:
            total += n * (length - prev)
            prev = length
            n = n if stop_once else max(0, n - math.ceil(d - 1))
    return total


asha_settings = dict(
    max_length=st.integers(1, 300),
    max_trials=st.integers(1, 60),
    divisor=st.sampled_from([1.5, 2.0, 2.5, 3.0, 4.0]),
    max_rungs=st.integers(1, 5),
    mode=st.sampled_from(["aggressive", "standard", "conservative"]),
    mct=st.integers(0, 6),
    stop_once=st.booleans(),
    concurrency=st.integers(0, 4),
    shuffle=st.one_of(st.none(), st.integers(0, 10**6)),
    exits=st.dictionaries(
        st.integers(1, 60),
        st.tuples(st.sampled_from(list(ExitedReason)), st.integers(0, 4)),
        max_size=8,
    ),
)


@settings(max_examples=120, deadline=None, database=None)
@given(**asha_settings)
def test_asha_layout_budget_and_lengths(
    max_length, max_trials, divisor, max_rungs, mode, mct, stop_once, concurrency, shuffle, exits
) -> None:
    config = make_config(
        "adaptive_asha", max_length={"records": max_length}, max_trials=max_trials,
        divisor=divisor, max_rungs=max_rungs, mode=mode, max_concurrent_trials=mct,
        stop_once=stop_once,
    )
    lengths, trials, conc = expected_layout(max_length, max_trials, divisor, max_rungs, mode, mct)
    method = make_searcher(config).method
    assert [b.lengths for b in method.brackets] == lengths
    assert [b.max_trials for b in method.brackets] == trials
    assert [b.concurrency for b in method.brackets] == conc

    result = simulate(config, noisy, concurrency=concurrency, shuffle_seed=shuffle, exits=exits)
    assert result.shutdown is not None
    assert len(result.trials) == sum(trials)
    assert result.total_units <= budget_bound(lengths, trials, divisor, stop_once)
    allowed = {length for ls in lengths for length in ls}
    for t in result.trials.values():
        assert t.closed or t.exited is not None
        assert all(length in allowed and length <= max_length for length in t.train_lengths)
        assert t.train_lengths == sorted(t.train_lengths)
    assert all(0.0 <= p <= 1.0 for p in result.progress) and result.progress[-1] == 1.0
    errored = [t for t in result.trials.values() if t.exited is ExitedReason.ERRORED]
    assert result.shutdown.failure == (len(errored) == len(result.trials))


def test_asha_favours_good_hyperparameters() -> None:
    config = make_config("adaptive_asha", max_trials=60, max_length={"batches": 256})
    result = simulate(config, curve, shuffle_seed=1, concurrency=4)
    top = max(max(t.train_lengths) for t in result.trials.values())
    assert top == 256

    def quality(t):
        return abs(math.log10(t.hparams["lr"]) + 2.5)

    finalists = [quality(t) for t in result.trials.values() if max(t.train_lengths) == top]
    everyone = [quality(t) for t in result.trials.values()]
    assert statistics.mean(finalists) < 0.5 * statistics.mean(everyone)
    # Far less training than running every trial to max_length.
    assert result.total_units < 0.3 * 60 * 256


@pytest.mark.parametrize("shuffle", [None, 1, 2, 3])
@pytest.mark.parametrize("exits", [{}, {1: ExitedReason.ERRORED}, {3: (ExitedReason.ERRORED, 2)}])
def test_close_out_never_closes_a_trial_that_could_still_be_promoted(shuffle, exits) -> None:
    # Four rungs: close-out must stop at the first rung (bottom up) with outstanding trials.
    config = make_config("adaptive_asha", max_trials=24, divisor=2.0, max_rungs=4)
    result = simulate(config, curve, shuffle_seed=shuffle, exits=exits)
    assert result.shutdown == Shutdown()
    for rid, trial in result.trials.items():
        ops = [op for op in result.op_log if getattr(op, "request_id", None) == rid]
        assert not any(isinstance(op, Close) for op in ops[:-1])
        assert trial.closed or trial.exited is not None
        if trial.closed:
            assert isinstance(ops[-1], Close)
