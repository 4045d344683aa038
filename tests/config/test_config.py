import warnings

import pytest

from determined.config import ExperimentConfig, Length, Unit, load_config, validate_config
from determined.errors import InvalidConfigError

BASE = {
    "entrypoint": "model_def:Trial",
    "hyperparameters": {"global_batch_size": 32},
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 100}},
}


def cfg(**overrides):
    raw = dict(BASE)
    raw.update(overrides)
    return validate_config(raw)


def errors_of(raw):
    with pytest.raises(InvalidConfigError) as e:
        validate_config(raw)
    return dict(e.value.errors), str(e.value)


def test_defaults_applied():
    c = cfg()
    assert c["scheduling_unit"] == 100
    assert c["max_restarts"] == 5
    assert c["checkpoint_policy"] == "best"
    assert c["perform_initial_validation"] is False
    assert c["searcher"]["smaller_is_better"] is True
    assert c["resources"]["slots_per_trial"] == 1
    assert c["optimizations"]["aggregation_frequency"] == 1
    assert 0 <= c["reproducibility"]["experiment_seed"] < 2**31
    assert c["description"].startswith("Experiment (")
    assert c["hyperparameters"]["global_batch_size"] == {"type": "const", "val": 32}


def test_hparam_space_normalized_with_nesting():
    c = cfg(hyperparameters={
        "global_batch_size": {"type": "int", "minval": 8, "maxval": 64},
        "lr": {"type": "log", "minval": -4, "maxval": -1},
        "act": {"type": "categorical", "vals": ["relu", "tanh"]},
        "opt": {"name": "sgd", "momentum": {"type": "double", "minval": 0, "maxval": 0.9, "count": 3}},
        "layers": [64, 32],
    })
    hp = c["hyperparameters"]
    assert hp["lr"] == {"type": "log", "minval": -4.0, "maxval": -1.0, "base": 10.0}
    assert hp["opt"]["name"] == {"type": "const", "val": "sgd"}
    assert hp["opt"]["momentum"]["count"] == 3
    assert hp["layers"] == {"type": "const", "val": [64, 32]}


def test_every_error_listed_with_field_paths():
    errors, text = errors_of({
        "hyperparameters": {
            "lr": {"type": "log", "minval": -1, "maxval": -4},
            "nested": {"x": {"type": "int", "minval": "a", "maxval": 3}},
        },
        "searcher": {"name": "adaptive_asha", "metric": "loss", "max_trials": 0,
                     "max_length": {"batches": 10}, "bogus": 1},
        "checkpoint_storage": {"type": "shared_fs", "host_path": "relative/path"},
        "unknown_top": 1,
        "min_validation_period": {"epochs": 2},
    })
    assert set(errors) >= {
        "entrypoint",
        "hyperparameters.global_batch_size",
        "hyperparameters.lr",
        "hyperparameters.nested.x.minval",
        "searcher.max_trials",
        "searcher.bogus",
        "checkpoint_storage.host_path",
        "unknown_top",
        "min_validation_period",
    }
    assert "greater than 0" in errors["searcher.max_trials"]
    assert "records_per_epoch" in errors["min_validation_period"]
    assert "absolute" in errors["checkpoint_storage.host_path"]
    assert text.startswith("Invalid experiment config (9 errors)")


def test_unknown_searcher_names_choices():
    errors, _ = errors_of({**BASE, "searcher": {"name": "bayes", "metric": "x"}})
    assert "adaptive_asha" in errors["searcher.name"] and "'bayes'" in errors["searcher.name"]


def test_searcher_specific_rules():
    errors, _ = errors_of({**BASE, "searcher": {
        "name": "adaptive", "metric": "x", "max_length": {"batches": 100}, "budget": {"epochs": 50}}})
    assert any("same unit" in m for m in errors.values())
    errors, _ = errors_of({**BASE, "searcher": {
        "name": "pbt", "metric": "x", "population_size": 4, "num_rounds": 2,
        "length_per_round": {"batches": 10},
        "replace_function": {"truncate_fraction": 0.8},
        "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2}}})
    assert "searcher.replace_function.truncate_fraction" in errors
    errors, _ = errors_of({**BASE, "searcher": {**BASE["searcher"], "source_trial_id": 1,
                                                "source_checkpoint_uuid": "abc"}})
    assert any("at most one" in m for m in errors.values())


def test_global_batch_size_rules():
    # As 0.13: smaller than slots_per_trial is accepted at create (the trial checks it).
    c = cfg(hyperparameters={"global_batch_size": 2}, resources={"slots_per_trial": 4})
    assert c["resources"]["slots_per_trial"] == 4
    errors, _ = errors_of({**BASE, "hyperparameters": {"global_batch_size": "big"}})
    assert "positive integer" in errors["hyperparameters.global_batch_size"]


def test_bad_entrypoint_format():
    errors, _ = errors_of({**BASE, "entrypoint": "model_def.Trial"})
    assert "<module>:<object>" in errors["entrypoint"]


def test_legacy_aliases_converted_with_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = validate_config({
            **BASE,
            "batches_per_step": 10,
            "min_validation_period": 2,
            "searcher": {"name": "adaptive", "metric": "x", "max_steps": 5, "step_budget": 50},
        })
    assert c["scheduling_unit"] == 10
    assert c["min_validation_period"] == {"batches": 20}
    assert c["searcher"]["max_length"] == {"batches": 50}
    assert c["searcher"]["budget"] == {"batches": 500}
    assert any("batches_per_step" in str(w.message) for w in caught)


def test_lengths_and_units():
    assert Length.from_dict({"records": 100}).to_batches(32) == 3
    assert Length.from_dict({"epochs": 2}).to_batches(32, records_per_epoch=1000) == 62
    assert Length(Unit.BATCHES, 7).to_dict() == {"batches": 7}
    with pytest.raises(ValueError, match="records_per_epoch"):
        Length.from_dict({"epochs": 1}).to_batches(32)
    with pytest.raises(ValueError, match="exactly one key"):
        Length.from_dict({"batches": 1, "epochs": 2})
    c = ExperimentConfig(cfg(records_per_epoch=640, min_validation_period={"epochs": 1}))
    assert c.to_batches(c.raw["min_validation_period"], 64) == 10


def test_load_config_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("searcher: [unclosed\n")
    with pytest.raises(InvalidConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(InvalidConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("3\n")
    with pytest.raises(InvalidConfigError, match="mapping"):
        load_config(scalar)


def test_merge_defaults_under_user_config():
    c = validate_config(
        {**BASE, "checkpoint_storage": {"save_trial_best": 3}},
        defaults={"checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/x"}},
    )
    assert c["checkpoint_storage"]["type"] == "shared_fs"
    assert c["checkpoint_storage"]["save_trial_best"] == 3


def test_examples_validate(examples_dir):
    import glob

    files = [f for f in glob.glob(str(examples_dir / "*" / "*.yaml")) if "/native_" not in f]
    assert files
    for f in files:
        validate_config(load_config(f))
