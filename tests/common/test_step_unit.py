"""What a trial's steps count (``determined.common.entrypoint.step_unit``), the one
function the CLI, the local runner, the engine's log lines and the master's API (for the
web UI) share: batches for a Trial class, the searcher's unit for a script."""

import doctest

import pytest

import determined.common.entrypoint as entrypoint
from determined.common.entrypoint import STEP_UNITS, step_unit, step_units, steps_text
from determined.config import validate_config

SCRIPT = {"entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}}
TRIAL = {"entrypoint": "model_def:Trial", "hyperparameters": {"global_batch_size": 8}}


def searcher(**fields):
    return {"name": "single", "metric": "loss", **fields}


@pytest.mark.parametrize("config, unit", [
    ({**TRIAL, "searcher": searcher(max_length={"batches": 9})}, "batch"),
    ({**TRIAL, "records_per_epoch": 64, "searcher": searcher(max_length={"epochs": 2})},
     "batch"),  # a Trial class counts batches whatever the length unit
    ({**SCRIPT, "searcher": searcher(max_length={"batches": 9})}, "batch"),
    ({**SCRIPT, "searcher": searcher(max_length={"epochs": 3})}, "epoch"),
    ({**SCRIPT, "searcher": searcher(max_length={"records": 640})}, "record"),
    ({**SCRIPT, "entrypoint": ["python3", "train.py"],
      "searcher": searcher(max_length={"epochs": 3})}, "epoch"),
    ({**SCRIPT, "searcher": searcher()}, "step"),  # runs until it exits
    ({**SCRIPT, "searcher": {"name": "adaptive_asha", "metric": "loss", "max_trials": 4,
                             "time_metric": "batches", "max_time": 100}}, "step"),
    ({**SCRIPT, "searcher": {"name": "pbt", "metric": "loss", "population_size": 2,
                             "num_rounds": 2, "length_per_round": {"epochs": 1},
                             "replace_function": {"truncate_fraction": 0.5},
                             "explore_function": {"resample_probability": 0.5,
                                                  "perturb_factor": 0.2}}}, "epoch"),
])
def test_validated_configs(config, unit):
    assert step_unit(config) == unit
    assert step_unit(validate_config(config)) == unit
    assert step_units(config) == STEP_UNITS[unit]


def test_odd_configs_fall_back_without_raising():
    assert step_unit({}) == "batch"
    assert step_unit({"entrypoint": "python3 x.py", "searcher": None}) == "step"
    assert step_unit({"entrypoint": "python3 x.py", "searcher": {"max_length": 5}}) == "batch"
    assert step_unit({"entrypoint": "python3 x.py",
                      "searcher": {"max_length": {"weeks": 5}}}) == "step"


def test_steps_text_agrees_in_number():
    assert [steps_text(n, u) for n, u in ((1, "epoch"), (2, "epoch"), (1, "batch"),
                                          (0, "record"), (1, "step"))] == [
        "1 epoch", "2 epochs", "1 batch", "0 records", "1 step"]


def test_doctests():
    failed, attempted = doctest.testmod(entrypoint)
    assert failed == 0 and attempted >= 7


def test_local_display_uses_the_shared_function():
    from determined.local import _display

    assert _display.step_unit is step_unit


def test_the_web_uis_units_are_pythons():
    """The web UI names units from the master's ``step_unit`` with its own ``STEP_UNITS``
    (webui/src/format.ts): the same words."""
    import pathlib
    import re

    source = (pathlib.Path(__file__).resolve().parents[2] / "webui" / "src" / "format.ts"
              ).read_text()
    body = re.search(r"export const STEP_UNITS[^=]*= \{([^}]*)\}", source).group(1)
    assert dict(re.findall(r'(\w+): "(\w+)"', body)) == STEP_UNITS
