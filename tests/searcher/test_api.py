"""Package surface, operations, config errors, snapshots and doctests."""

import dataclasses
import doctest
import importlib
import json
import pkgutil

import pytest

import determined.searcher as searcher_pkg
from determined.config import Length, assume_metric
from determined.searcher import (
    Checkpoint,
    Close,
    Create,
    SearcherError,
    Shutdown,
    Train,
    Validate,
    make_searcher,
    operation_from_dict,
)

from ._helpers import METRIC, make_config


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in dir(searcher_pkg) if not name.startswith("_")}
    assert set(searcher_pkg.__all__) == public


@pytest.mark.parametrize(
    "op",
    [
        Create(1, 5, {"a": {"b": 1}, "c": [1, 2]}),
        Create(7, 0, {}, checkpoint_of=3),
        Train(2, Length.from_dict({"records": 640})),
        Validate(2),
        Checkpoint(4),
        Close(4),
        Shutdown(),
        Shutdown(True, "every trial failed"),
    ],
)
def test_operations_round_trip_through_json(op) -> None:
    assert operation_from_dict(json.loads(json.dumps(op.to_dict()))) == op


def test_unknown_operation_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="type='nope'"):
        operation_from_dict({"type": "nope"})


@pytest.mark.parametrize(
    "name, fields, field",
    [
        ("bogus", {}, "searcher.name"),
        ("adaptive_asha", {"max_trials": 16, "divisor": 1.0}, "divisor"),
        ("adaptive_asha", {"max_trials": 16, "divisor": 0.5}, "divisor"),
        ("adaptive_simple", {"max_trials": 16, "divisor": 1}, "divisor"),
        ("adaptive", {"budget": {"batches": 1000}, "divisor": 1.0}, "divisor"),
        ("random", {"max_trials": 0}, "max_trials"),
        ("adaptive_asha", {"max_trials": 0}, "max_trials"),
        ("adaptive_simple", {"max_trials": 2001}, "max_trials"),
        ("random", {"max_trials": 3, "max_concurrent_trials": -1}, "max_concurrent_trials"),
        ("adaptive_asha", {"max_trials": 16, "mode": "wild"}, "mode"),
        ("adaptive_asha", {"max_trials": 16, "max_rungs": 0}, "max_rungs"),
        ("adaptive", {"budget": {"batches": 64}}, "budget"),
        ("adaptive", {"budget": {"epochs": 1000}}, "budget"),
        ("adaptive", {}, "searcher.budget"),
        ("adaptive_asha", {"max_trials": 2, "max_length": None}, "searcher.max_length"),
        ("random", {"max_trials": 2, "max_length": None, "time_metric": "batches"},
         "searcher.max_time"),
        ("adaptive_asha", {"max_trials": 2, "time_metric": "batches", "max_time": 8},
         "searcher.max_length"),
        ("single", {"max_length": None, "time_metric": "batches", "max_time": 0},
         "searcher.max_time"),
        ("single", {"max_length": None, "time_metric": "", "max_time": 3},
         "searcher.time_metric"),
        ("random", {"max_trials": 2, "max_length": {"batches": 0}}, "max_length"),
        ("random", {"max_trials": 2, "max_length": {"steps": 5}}, "searcher.max_length"),
        ("pbt", {"replace_function": {"truncate_fraction": 0.6}}, "truncate_fraction"),
        ("pbt", {"explore_function": {"resample_probability": 1.5, "perturb_factor": 0.1}},
         "resample_probability"),
        ("pbt", {"explore_function": {"resample_probability": 0.5}},
         "searcher.explore_function.perturb_factor"),
        ("pbt", {"population_size": 0}, "population_size"),
        ("pbt", {"num_rounds": 0}, "num_rounds"),
        ("random", {"max_trials": 2, "metric": None}, "searcher.metric"),
    ],
)
def test_bad_configs_raise_value_error_naming_the_field(name, fields, field) -> None:
    with pytest.raises(ValueError) as info:
        make_searcher(make_config(name, **fields))
    assert field in str(info.value)


def test_bad_space_and_seed_raise_value_error_naming_the_field() -> None:
    config = make_config("single")
    config["hyperparameters"]["lr"]["minval"] = 0.0  # > maxval -1.0
    with pytest.raises(ValueError, match="hyperparameters.lr.minval"):
        make_searcher(config)
    config = make_config("single")
    config["hyperparameters"]["act"]["vals"] = []
    with pytest.raises(ValueError, match="hyperparameters.act.vals"):
        make_searcher(config)
    config = make_config("single")
    del config["reproducibility"]
    with pytest.raises(ValueError, match="reproducibility.experiment_seed"):
        make_searcher(config)


def test_missing_metric_raises_searcher_error_in_the_shared_wording() -> None:
    s = make_searcher(make_config("random", max_trials=2))
    s.start()
    s.on_trial_created(1)
    with pytest.raises(SearcherError) as info:
        s.on_validation_completed(1, {"loss": 0.3, "accuracy": 0.9})
    assert str(info.value) == (f"the validation metrics of trial 1 lack the searcher metric "
                               f"{METRIC!r} (received: accuracy, loss)")


def test_missing_assumed_metric_says_the_config_named_none() -> None:
    # A submitter that filled in the default metric (config.assume_metric): the error
    # says what the user's config set, not the default as though the user had named it.
    config = make_config("single")
    del config["searcher"]["metric"]
    assume_metric(config, {"name": "single"})
    s = make_searcher(config)
    s.start()
    with pytest.raises(SearcherError) as info:
        s.on_validation_completed(1, {"loss": 0.3})
    assert str(info.value) == (
        "the config's searcher section sets no metric, so the searcher metric is assumed "
        "to be validation_loss (the default); the validation metrics of trial 1 lack it "
        "(received: loss)")


def test_non_numeric_metric_raises_searcher_error() -> None:
    s = make_searcher(make_config("single"))
    s.start()
    with pytest.raises(SearcherError, match=METRIC):
        s.on_validation_completed(1, {METRIC: "oops"})


def test_events_that_break_the_driver_contract_raise_searcher_error() -> None:
    s = make_searcher(make_config("single"))
    with pytest.raises(SearcherError):
        s.on_trial_created(1)  # before start()
    s.start()
    with pytest.raises(SearcherError):
        s.start()
    with pytest.raises(SearcherError):
        s.on_trial_created(99)
    with pytest.raises(SearcherError):
        s.on_trial_closed(1)  # no Close was issued
    assert s.on_validation_completed(1, {METRIC: 1.0}) == [Close(1)]
    with pytest.raises(SearcherError):
        s.on_validation_completed(1, {METRIC: 1.0})  # no Validate outstanding


def test_larger_is_better_is_negated() -> None:
    config = make_config("adaptive_asha", max_trials=4, divisor=2.0, mode="aggressive",
                         max_length={"batches": 2}, smaller_is_better=False)
    s = make_searcher(config)
    s.start()
    assert s.on_validation_completed(1, {METRIC: 0.1}) == []
    # With larger-is-better, 0.9 beats 0.1 and is promoted now.
    ops = s.on_validation_completed(2, {METRIC: 0.9})
    assert ops[:2] == [Train(2, Length.from_dict({"batches": 2})), Validate(2)]


def test_snapshot_is_json_and_restore_reproduces_it() -> None:
    config = make_config("adaptive_asha", max_trials=8)
    s = make_searcher(config)
    s.start()
    s.on_trial_created(1)
    s.on_validation_completed(1, {METRIC: 0.5})
    snap = json.loads(json.dumps(s.snapshot()))
    restored = type(s).restore(config, snap)
    assert restored.snapshot() == s.snapshot()
    assert restored.trial_hparams(2) == s.trial_hparams(2)
    with pytest.raises(ValueError, match="snapshot"):
        type(s).restore(make_config("random", max_trials=3), snap)


def test_snapshot_trial_entries_hold_every_field_as_copies() -> None:
    s = make_searcher(make_config("random", max_trials=2))
    s.start()
    (entry, _) = s.snapshot()["trials"]
    trial = s._trials[entry["request_id"]]
    assert entry == dataclasses.asdict(trial)
    entry["hparams"]["lr"] = "changed"
    entry["pending_validations"].append(99)
    assert s.snapshot()["trials"][0] == dataclasses.asdict(trial)


def test_snapshot_serializes_a_finished_trial_once(monkeypatch) -> None:
    # Snapshots follow every event of an experiment: finished trials, which never
    # change again, must not be serialized again each time (quadratic in trials).
    s = make_searcher(make_config("random", max_trials=2, max_concurrent_trials=1))
    s.start()
    s.on_trial_created(1)
    s.on_validation_completed(1, {METRIC: 0.5})
    s.on_trial_closed(1)
    s.on_trial_created(2)
    calls = []
    real = type(s._trials[1]).to_dict
    monkeypatch.setattr(type(s._trials[1]), "to_dict",
                        lambda t: calls.append(t.request_id) or real(t))
    first = s.snapshot()
    assert s.snapshot() == first
    assert calls.count(1) == 1 and calls.count(2) == 2


def test_driver_views() -> None:
    s = make_searcher(make_config("single"))
    ops = s.start()
    create = ops[0]
    assert s.request_ids == [1]
    assert s.trial_hparams(1) == create.hparams
    assert s.trial_seed(1) == create.trial_seed
    assert s.trained_length(1) == Length.from_dict({"batches": 64})
    assert not s.is_finished(1)
    assert s.progress() == 0.0


def test_module_doctests() -> None:
    for info in pkgutil.iter_modules(searcher_pkg.__path__):
        module = importlib.import_module(f"determined.searcher.{info.name}")
        failed, _ = doctest.testmod(module)
        assert failed == 0, info.name
