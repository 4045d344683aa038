"""Self-paced searches: ``searcher.time_metric``/``max_time`` and searchers without
``max_length``, where scripts train their own length and the searcher decides on the
validations they report."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.searcher import (
    Close,
    Create,
    ExitedReason,
    Searcher,
    SearcherError,
    Shutdown,
    Train,
    Validate,
    make_searcher,
    simulate,
)

from ._helpers import METRIC, curve, make_config, noisy, op_dicts


def time_config(name: str = "adaptive_asha", time_metric: str = "batches", max_time: int = 64,
                **fields):
    cfg = make_config(name, time_metric=time_metric, max_time=max_time, **fields)
    del cfg["searcher"]["max_length"]
    return cfg


def asha(**fields) -> Searcher:
    defaults = dict(max_trials=8, divisor=2.0, max_rungs=3, mode="aggressive")
    return make_searcher(time_config(**dict(defaults, **fields)))


def creates(ops):
    return [op.request_id for op in ops if isinstance(op, Create)]


def test_time_metric_asha_gives_no_operations_and_ranks_once_per_rung() -> None:
    s = asha(max_concurrent_trials=2)  # one bracket, rungs at 16, 32, 64 batches
    assert s.self_paced and s.unit is None
    assert s.method.brackets[0].thresholds == [16, 32, 64]
    first = s.start()
    assert all(isinstance(op, Create) for op in first) and creates(first) == [1, 2]
    for rid in (1, 2):
        assert s.on_trial_created(rid) == []
    # Below the first rung nothing is decided; a report without the time metric neither.
    assert s.on_validation_reported(1, {METRIC: 0.5, "batches": 15}) == []
    assert s.on_validation_reported(1, {METRIC: 0.1}) == []
    # Rung 0: the first result continues (top max(floor(1/2), 1) = 1) ...
    assert s.on_validation_reported(1, {METRIC: 0.5, "batches": 16}) == []
    # ... a worse second one is stopped, and a new trial takes its place.
    ops = s.on_validation_reported(2, {METRIC: 0.9, "batches": 20})
    assert ops[0] == Close(2) and creates(ops) == [3]
    # A closing trial's later reports change nothing.
    assert s.on_validation_reported(2, {METRIC: 0.0, "batches": 64}) == []
    assert s.on_trial_closed(2) == []
    # One report past several rungs ranks the trial at each, in order, up to the top.
    ops = s.on_validation_reported(1, {METRIC: 0.4, "batches": 64})
    assert ops[0] == Close(1)
    assert [r[0] for r in s.method.brackets[0].rungs[1].results] == [1]
    assert [r[0] for r in s.method.brackets[0].rungs[2].results] == [1]
    assert not any(isinstance(op, (Train, Validate)) for op in ops)


def test_report_errors_name_the_metric() -> None:
    s = asha()
    s.start()
    s.on_trial_created(1)
    with pytest.raises(SearcherError, match="'batches'"):
        s.on_validation_reported(1, {METRIC: 0.5, "batches": "ten"})
    with pytest.raises(SearcherError, match="'batches'"):
        s.on_validation_reported(1, {METRIC: 0.5, "batches": -1})
    with pytest.raises(SearcherError, match=repr(METRIC)):
        s.on_validation_reported(1, {"batches": 16})


def test_a_script_that_ends_on_its_own_finishes_its_trial_and_makes_room() -> None:
    s = asha(max_concurrent_trials=1, max_trials=2)
    assert creates(s.start()) == [1]
    s.on_trial_created(1)
    s.on_validation_reported(1, {METRIC: 0.5, "batches": 16})
    ops = s.on_trial_finished(1)  # the script exited 0 before the next rung
    assert creates(ops) == [2] and s.is_finished(1)
    s.on_trial_created(2)
    ops = s.on_trial_exited_early(2, ExitedReason.ERRORED)
    assert ops == [Shutdown(failure=False)]  # one trial finished: not all failed


@pytest.mark.parametrize("name,fields", [
    ("single", {}),
    ("random", {"max_trials": 3, "max_concurrent_trials": 2}),
    ("grid", {"space": {"x": {"type": "categorical", "vals": [1, 2, 3]}}}),
])
def test_simple_methods_close_trials_at_max_time(name, fields) -> None:
    cfg = time_config(name, time_metric="epochs", max_time=10, **fields)
    s = make_searcher(cfg)
    ops = s.start()
    assert ops and all(isinstance(op, Create) for op in ops)
    rid = ops[0].request_id
    s.on_trial_created(rid)
    assert s.on_validation_reported(rid, {METRIC: 1.0, "epochs": 9.5}) == []
    assert s.on_validation_reported(rid, {METRIC: 1.0, "epochs": 10})[0] == Close(rid)
    # Scripts that would train 20 epochs are stopped at the first report at 10 or more.
    result = simulate(cfg, noisy, concurrency=2, report_every=3,
                      script_length=lambda hp, seed: 20)
    assert result.shutdown == Shutdown()
    assert all(t.closed and t.trained_units == 12 for t in result.trials.values())


@pytest.mark.parametrize("name", ["single", "random", "grid"])
def test_without_max_length_each_trial_runs_until_its_script_exits(name) -> None:
    cfg = make_config(name, **({"max_trials": 2} if name == "random" else {}),
                      space={"x": {"type": "categorical", "vals": [1, 2]}})
    del cfg["searcher"]["max_length"]
    s = make_searcher(cfg)
    ops = s.start()
    assert all(isinstance(op, Create) for op in ops)
    assert s.on_trial_created(1) == [] and s.progress() == 0.0
    # With no length, progress comes as a fraction of each trial.
    assert 0 < s.progress({1: 0.5}) < 1
    assert s.on_validation_reported(1, {METRIC: 0.3}, steps=100) == []
    result = simulate(cfg, noisy, script_length=lambda hp, seed: 7 + hp["x"])
    assert result.shutdown == Shutdown()
    assert len(result.trials) == (1 if name == "single" else 2)
    assert all(t.closed and t.trained_units == 7 + t.hparams["x"]
               for t in result.trials.values())
    assert result.progress[-1] == 1.0


def test_progress_counts_reported_time_and_finished_trials_whole() -> None:
    s = asha(max_concurrent_trials=2, max_trials=2)
    s.start()
    s.on_trial_created(1)
    s.on_trial_created(2)
    assert s.progress() == 0.0
    s.on_validation_reported(1, {METRIC: 0.5, "batches": 8})
    assert s.progress() == pytest.approx(8 / 128)
    assert s.progress({2: 32}) == pytest.approx(40 / 128)  # trial_progressed units
    s.on_trial_finished(1)
    assert s.progress() == pytest.approx(64 / 128)


def test_classic_search_counts_a_script_ending_early_as_a_missing_result() -> None:
    cfg = make_config("adaptive_asha", max_trials=4, divisor=2.0, max_rungs=2)
    s = make_searcher(cfg)
    s.start()
    s.on_trial_created(1)
    s.on_trial_finished(1)  # its Train/Validate were never done
    assert s.is_finished(1)
    assert s.method.brackets[0].rungs[0].results[0][:2] == [1, float("inf")]


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_time_metric_asha_finishes_with_each_sampler(sampler) -> None:
    cfg = time_config(max_trials=12, divisor=2.0, max_rungs=3, sampler=sampler)
    result = simulate(cfg, curve, shuffle_seed=1, concurrency=3)
    assert result.shutdown == Shutdown()
    assert len(result.trials) == 12
    if sampler == "tpe":
        assert make_searcher(cfg).sampler.name == "tpe"


def test_restore_mid_search_continues_identically() -> None:
    cfg = time_config(max_trials=10, divisor=2.0, max_rungs=3)
    plain = simulate(cfg, curve, shuffle_seed=4, concurrency=3)
    restored = simulate(cfg, curve, shuffle_seed=4, concurrency=3, restore_at=range(1, 200, 7))
    assert op_dicts(plain) == op_dicts(restored)
    snap = json.loads(json.dumps(make_searcher(cfg).snapshot()))
    assert Searcher.restore(cfg, snap).self_paced


@settings(max_examples=60, deadline=None)
@given(
    max_trials=st.integers(1, 20),
    divisor=st.sampled_from([2.0, 3.0, 4.0]),
    max_rungs=st.integers(1, 4),
    mode=st.sampled_from(["aggressive", "standard", "conservative"]),
    max_time=st.integers(1, 200),
    concurrency=st.integers(0, 5),
    shuffle=st.integers(0, 1000),
    period=st.integers(1, 50),
    lengths=st.lists(st.integers(1, 300), min_size=1, max_size=5),
    exits=st.dictionaries(st.integers(1, 20), st.tuples(
        st.sampled_from(list(ExitedReason)), st.integers(0, 6)), max_size=4),
    restore=st.lists(st.integers(1, 80), max_size=3),
)
def test_time_metric_asha_always_ends_with_every_trial_finished(
    max_trials, divisor, max_rungs, mode, max_time, concurrency, shuffle, period, lengths,
    exits, restore,
) -> None:
    cfg = time_config(max_time=max_time, max_trials=max_trials, divisor=divisor,
                      max_rungs=max_rungs, mode=mode)
    result = simulate(
        cfg, noisy, concurrency=concurrency, shuffle_seed=shuffle, report_every=period,
        script_length=lambda hp, seed: lengths[seed % len(lengths)],
        exits=exits, restore_at=restore,
    )
    assert result.shutdown is not None, "the search got stuck"
    assert len(result.trials) == max_trials
    assert all(t.closed or t.exited is not None for t in result.trials.values())
    assert not any(isinstance(op, (Train, Validate)) for op in result.op_log)
    closes = [op.request_id for op in result.op_log if isinstance(op, Close)]
    assert len(closes) == len(set(closes))
    for t in result.trials.values():  # nobody trains on past its first report at max_time
        assert t.trained_units < max_time + period
    failed = all(t.exited is ExitedReason.ERRORED for t in result.trials.values())
    assert result.shutdown.failure == failed
    assert result.progress == sorted(result.progress) or restore
    assert result.progress[-1] == 1.0
