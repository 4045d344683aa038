"""Script entrypoints in the config: which values are commands, what they run, what a
script experiment does not need, 0.38's ``name``, and errors naming the field."""

import sys

import pytest

from determined.experiment_validation import validate_experiment
from determined.config import is_script_entrypoint, script_command, validate_config
from determined.errors import InvalidConfigError

SCRIPT = {
    "entrypoint": "python3 train.py --epochs 3",
    "hyperparameters": {"lr": 0.1},
    "searcher": {"name": "single", "metric": "loss", "max_length": {"epochs": 3}},
}


def errors_of(raw):
    with pytest.raises(InvalidConfigError) as e:
        validate_config(raw)
    return dict(e.value.errors)


@pytest.mark.parametrize("value, expected", [
    ("python3 train.py", True), (["python3", "train.py"], True), ("./run.sh", True),
    ("bash -c 'python3 x.py'", True), ("model_def:MyTrial", False), ("pkg.mod:A.B", False),
    ("model_def.MyTrial", False), ("train.py", False), ("model_def:", False), (None, False),
    ("", False), (3, False),
])
def test_which_entrypoints_are_scripts(value, expected):
    assert is_script_entrypoint(value) is expected


def test_script_command_runs_this_python_for_python_and_python3():
    assert script_command("python3 train.py --lr '1e-3'") == [
        sys.executable, "train.py", "--lr", "1e-3"]
    assert script_command(["python", "-m", "pkg.train"]) == [sys.executable, "-m", "pkg.train"]
    assert script_command("./run.sh a") == ["./run.sh", "a"]
    with pytest.raises(ValueError, match="Expected a command entrypoint"):
        script_command("model_def:MyTrial")


def test_script_needs_no_batch_size_nor_records_per_epoch_and_keeps_its_form():
    cfg = validate_config(SCRIPT)
    assert cfg["entrypoint"] == "python3 train.py --epochs 3"
    assert "global_batch_size" not in cfg["hyperparameters"]
    assert validate_config(dict(SCRIPT, entrypoint=["python3", "train.py"]))["entrypoint"] == \
        ["python3", "train.py"]
    # A Trial class still needs both.
    errors = errors_of(dict(SCRIPT, entrypoint="model_def:MyTrial"))
    assert "hyperparameters.global_batch_size" in errors and "searcher.max_length" in errors


def test_a_script_may_have_no_hyperparameters_but_a_trial_class_may_not():
    bare = {k: v for k, v in SCRIPT.items() if k != "hyperparameters"}
    assert validate_config(bare)["hyperparameters"] == {}
    assert "hyperparameters" in errors_of(dict(bare, entrypoint="model_def:MyTrial"))


def test_name_is_the_description_when_none_is_given():
    assert validate_config(dict(SCRIPT, name="mnist-core"))["description"] == "mnist-core"
    cfg = validate_config(dict(SCRIPT, name="mnist-core", description="mine"))
    assert (cfg["name"], cfg["description"]) == ("mnist-core", "mine")
    assert validate_config(SCRIPT)["description"].startswith("Experiment (")


@pytest.mark.parametrize("value, expected", [
    ("python3 'train.py", "cannot be split into words (No closing quotation)"),
    ([], "a list holds only strings, the first non-empty"),
    (["python3", 3], "(item 1 is int)"),
    (["", "x"], "a list holds only strings"),
    ("model_def:", "Received: 'model_def:'"),
    ("model_def.MyTrial", "a Trial class needs ':'"),
    ("train.py", "its interpreter ('python3 train.py')"),
    (7, "Received: 7"),
])
def test_bad_entrypoints_name_the_field_and_what_was_expected(value, expected):
    message = errors_of(dict(SCRIPT, entrypoint=value))["entrypoint"]
    assert message.startswith("Expected a Trial class '<module>:<object>'")
    assert expected in message


def test_the_script_file_must_come_with_the_context(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    storage = {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}

    def check(entrypoint):
        validate_experiment(dict(SCRIPT, entrypoint=entrypoint), model_dir=str(tmp_path),
                            default_storage=storage)

    check("python3 train.py")
    with pytest.raises(InvalidConfigError, match="has no file 'missing.py' run by entrypoint"):
        check("python3 missing.py")
    check("python3 -m somewhere.else")  # other commands are not checked
