"""Determined 0.13 behaviours on a master (issue 23), read back as upstream's scripts
read them (``det t describe --metrics --json``): warm starts continue the source's
state and name its checkpoint, the initial validation is step 0, PBT clones name
their source, hand-built low-level metrics with structured values come back as
reported."""

import json
import pathlib

import pytest
import yaml

from det_cli_testing import run_det
from master_testing import create_experiment, wait_for_state
from upstream_compat_testing import (DRAWS, ESTIMATOR, PBT, check_estimator_steps,
                                    check_pbt_lineage, check_structured_steps)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE, TINY = FIXTURES / "upstream_compat", FIXTURES / "tiny_pytorch"


def run(master, config, model_dir=FIXTURE, timeout=240):
    with master.client() as c:
        exp_id = create_experiment(c, config, model_dir)
        exp = wait_for_state(c, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=timeout)
    assert exp["state"] == "COMPLETED", exp
    return exp


def described(master, trial_id):
    out = run_det(["-m", master.url, "t", "describe", trial_id, "--metrics", "--json"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_warm_start_continues_the_sources_state_on_a_master(shared_master):
    (src_trial,) = run(shared_master, DRAWS)["trials"]
    at10, at20 = described(shared_master, src_trial["id"])["steps"]
    config = dict(DRAWS, searcher=dict(DRAWS["searcher"], max_length={"batches": 10},
                                       source_checkpoint_uuid=at10["checkpoint"]["uuid"]))
    (trial,) = run(shared_master, config)["trials"]
    assert trial["warm_start_checkpoint_id"] == at10["checkpoint"]["id"]
    warm = described(shared_master, trial["id"])
    assert warm["warm_start_checkpoint_id"] == at10["checkpoint"]["id"]
    (first,) = warm["steps"]
    assert first["total_batches"] == 10
    got = first["validation"]["metrics"]["validation_metrics"]
    want = at20["validation"]["metrics"]["validation_metrics"]
    for name in ("py_draw", "np_draw", "torch_draw"):
        assert got[name] == want[name], name


def test_pbt_clones_name_their_parents_checkpoint_on_a_master(shared_master):
    exp = run(shared_master, PBT)
    by_id = {t["id"]: described(shared_master, t["id"]) for t in exp["trials"]}
    check_pbt_lineage(by_id)


def test_hand_built_metrics_and_step_0_on_a_master(shared_master):
    config = {
        "entrypoint": "model_def:StructuredTrial", "scheduling_unit": 2,
        "perform_initial_validation": True, "hyperparameters": {"global_batch_size": 4},
        "searcher": {"name": "single", "metric": "validation_error",
                     "max_length": {"batches": 4}},
        "min_validation_period": {"batches": 2}, "max_restarts": 0,
    }
    (trial,) = run(shared_master, config)["trials"]
    check_structured_steps(described(shared_master, trial["id"])["steps"])


def test_estimator_batch_metrics_and_request_stop_in_evaluation_on_a_master(shared_master):
    exp = run(shared_master, ESTIMATOR)
    (trial,) = exp["trials"]
    assert trial["total_batches"] == 10
    check_estimator_steps(described(shared_master, trial["id"])["steps"])


def test_piped_cli_output_is_complete_on_a_master(shared_master, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    long = "a description long enough that an 80-column table would shorten it " * 2
    config = {"entrypoint": "model_def:StructuredTrial", "description": long,
              "labels": ["first-label", "needle-label"],
              "hyperparameters": {"global_batch_size": 4},
              "searcher": {"name": "single", "metric": "validation_error",
                           "max_length": {"batches": 2}}}
    with shared_master.client() as c:
        exp_id = create_experiment(c, config, FIXTURE, activate=False)
    # `det e describe ID | grep label` finds the label; no table hides or shortens.
    for args in (["e", "describe", exp_id], ["e", "list"], ["e", "list-trials", exp_id],
                 ["agent", "list"], ["slot", "list"], ["user", "list"], ["task", "list"],
                 ["template", "list"], ["model", "list"], ["checkpoint", "list", exp_id]):
        out = run_det(["-m", shared_master.url, *map(str, args)])
        assert out.returncode == 0, (args, out.stderr)
        assert "(hidden:" not in out.stdout and "\u2026" not in out.stdout, (args, out.stdout)
    described = run_det(["-m", shared_master.url, "e", "describe", str(exp_id)]).stdout
    assert "needle-label" in described and long.strip() in described


@pytest.mark.parametrize("length", [{"epochs": 2}, {"records": 640}])
def test_test_mode_replaces_any_length_with_one_batch_on_a_master(shared_master, tmp_path,
                                                                   length):
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    # As 0.13's CLI: the length is replaced before validation, so a length the config
    # could not resolve (epochs, no records_per_epoch) does not stop a one-batch test.
    cfg["searcher"]["max_length"] = length
    cfg["min_validation_period"] = dict(length)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_det(["-m", shared_master.url, "e", "create", path, TINY,
                   "--test", "--json"])
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert answer["passed"] and [t["total_batches"] for t in answer["trials"]] == [1]


def test_test_mode_validates_the_config_as_written_on_a_master(shared_master, tmp_path):
    # As 0.13's CLI (validate_only first): a searcher the one-batch copy would replace
    # is still checked, so a misspelled name fails the test and creates nothing.
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    cfg["searcher"]["name"] = "singel"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_det(["-m", shared_master.url, "e", "create", path, TINY, "--test"])
    text = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 1, text
    assert f"Invalid experiment config {path}" in text
    assert "- searcher.name: Expected one of 'single'" in text and "Received: 'singel'" in text
    assert "Created test-mode experiment" not in text


def test_a_refused_config_is_named_by_its_file_on_a_master(shared_master, tmp_path):
    """The master's 400 lists the fields; the CLI names the file as a local run does."""
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    cfg["min_validaton_period"] = cfg.pop("min_validation_period")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_det(["-m", shared_master.url, "e", "create", path, TINY])
    assert out.returncode == 1, out.stdout
    assert out.stderr.startswith(
        f"det: error: Invalid experiment config {path} (1 error) (HTTP 400):\n"
        "  - min_validaton_period: unknown field"), out.stderr
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    out = run_det(["-m", shared_master.url, "e", "create", tmp_path / "list.yaml", TINY])
    assert out.returncode == 1, out.stdout
    assert "  - Expected a mapping" in out.stderr and "<root>" not in out.stderr, out.stderr
