"""Config fields for scripts that train their own length: ``searcher.time_metric`` and
``searcher.max_time`` (Determined 0.38), and searchers without ``max_length``."""

import pytest

from determined.config import validate_config
from determined.errors import InvalidConfigError

SCRIPT = {"entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}}
TRIAL = {"entrypoint": "model_def:Trial", "hyperparameters": {"global_batch_size": 8}}
ASHA = {"name": "adaptive_asha", "metric": "loss", "max_trials": 8}


def errors_of(raw):
    with pytest.raises(InvalidConfigError) as e:
        validate_config(raw)
    return dict(e.value.errors)


def test_scripts_search_by_time_metric_or_run_until_they_exit():
    c = validate_config({**SCRIPT, "searcher": {**ASHA, "time_metric": "batches",
                                                "max_time": 100}})
    assert (c["searcher"]["time_metric"], c["searcher"]["max_time"]) == ("batches", 100)
    assert "max_length" not in c["searcher"]
    for name, extra in (("single", {}), ("random", {"max_trials": 3}), ("grid", {})):
        c = validate_config({**SCRIPT, "searcher": {"name": name, "metric": "loss", **extra}})
        assert "max_length" not in c["searcher"] and "time_metric" not in c["searcher"]
    c = validate_config({**SCRIPT, "searcher": {"name": "single", "metric": "loss",
                                                "max_length": {"epochs": 3}}})
    assert c["searcher"]["max_length"] == {"epochs": 3}  # steps are epochs: no records_per_epoch


@pytest.mark.parametrize("searcher,field,words", [
    ({**ASHA, "time_metric": "batches"}, "searcher", "together"),
    ({**ASHA, "max_time": 10}, "searcher", "together"),
    ({**ASHA}, "searcher", "searcher.max_length, or searcher.time_metric"),
    ({**ASHA, "time_metric": "batches", "max_time": 10, "max_length": {"batches": 10}},
     "searcher", "not both"),
    ({**ASHA, "time_metric": "batches", "max_time": 0}, "searcher.max_time", "greater than 0"),
    ({**ASHA, "time_metric": "", "max_time": 5}, "searcher.time_metric", "at least 1"),
    ({"name": "single", "metric": "loss", "max_time": 5, "time_metric": "batches",
      "max_length": {"batches": 5}}, "searcher", "not both"),
    ({"name": "adaptive_simple", "metric": "loss", "max_trials": 4,
      "max_length": {"batches": 8}, "time_metric": "batches"}, "searcher.time_metric",
     "unknown field"),
])
def test_bad_time_fields_name_the_field(searcher, field, words):
    errors = errors_of({**SCRIPT, "searcher": searcher})
    assert field in errors and words in errors[field], errors


def test_a_trial_class_needs_max_length():
    errors = errors_of({**TRIAL, "searcher": {"name": "single", "metric": "loss"}})
    assert "Trial class" in errors["searcher.max_length"]
    errors = errors_of({**TRIAL, "searcher": {**ASHA, "time_metric": "batches",
                                              "max_time": 10}})
    assert "script" in errors["searcher.time_metric"]
    assert "script" in errors["searcher.max_time"]
