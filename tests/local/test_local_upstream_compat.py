"""Determined 0.13 behaviours that upstream's own fixtures and scripts rely on, run
locally with ``det e create --local`` (issue 23): warm starts continue the source's
state, the initial validation is step 0, PBT clones name their source, hand-built
low-level metrics with structured values are stored as reported."""

import json
import pathlib

import pytest
import yaml

from det_cli_testing import run_det
from upstream_compat_testing import (DRAWS, ESTIMATOR, PBT, check_estimator_steps,
                                    check_pbt_lineage, check_structured_steps)

pytestmark = pytest.mark.timeout(600)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE, TINY = FIXTURES / "upstream_compat", FIXTURES / "tiny_pytorch"

STRUCTURED = {
    "entrypoint": "model_def:StructuredTrial", "scheduling_unit": 2,
    "perform_initial_validation": True, "hyperparameters": {"global_batch_size": 4},
    "searcher": {"name": "single", "metric": "validation_error", "max_length": {"batches": 4}},
    "min_validation_period": {"batches": 2}, "max_restarts": 0,
}


def create(tmp_path, config):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    out = run_det(["e", "create", path, FIXTURE, "--local", "--local-dir", tmp_path / "local",
                   "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def steps(tmp_path, trial_id):
    out = run_det(["t", "describe", trial_id, "--metrics", "--json", "--local-dir",
                   tmp_path / "local"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def draws(step):
    metrics = step["validation"]["metrics"]["validation_metrics"]
    return {k: v for k, v in metrics.items() if k.endswith("_draw")}


def test_warm_start_continues_the_sources_state_and_names_its_checkpoint(tmp_path):
    source = create(tmp_path, DRAWS)
    (src_trial,) = source["trials"]
    src = steps(tmp_path, src_trial["trial_id"])
    at10, at20 = src["steps"]
    assert at10["total_batches"] == 10 and at10["checkpoint"]["state"] == "COMPLETED"
    config = dict(DRAWS, searcher=dict(DRAWS["searcher"], max_length={"batches": 10},
                                       source_checkpoint_uuid=at10["checkpoint"]["uuid"]))
    warm = create(tmp_path, config)
    (trial,) = warm["trials"]
    described = steps(tmp_path, trial["trial_id"])
    assert described["warm_start_checkpoint"] == at10["checkpoint"]["uuid"]
    assert described["warm_start_checkpoint_id"] == at10["checkpoint"]["id"]
    # Its own length from batch 0; its first validation draws what the source drew one
    # step after that checkpoint (Python, NumPy and PyTorch generators alike).
    (first,) = described["steps"]
    assert first["total_batches"] == 10
    assert draws(first) == draws(at20) and draws(first) != draws(at10)


def test_pbt_clones_are_warm_starts_from_their_parents_checkpoints(tmp_path):
    result = create(tmp_path, PBT)
    by_id = {t["trial_id"]: steps(tmp_path, t["trial_id"]) for t in result["trials"]}
    check_pbt_lineage(by_id)


def test_hand_built_metrics_and_initial_validation_at_step_0(tmp_path):
    result = create(tmp_path, STRUCTURED)
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED", trial["error"]
    described = steps(tmp_path, trial["trial_id"])
    check_structured_steps(described["steps"])


def test_estimator_request_stop_in_evaluation_ends_the_trial(tmp_path):
    result = create(tmp_path, ESTIMATOR)
    (trial,) = result["trials"]
    assert result["state"] == "COMPLETED" and trial["batches"] == 10
    check_estimator_steps(steps(tmp_path, trial["trial_id"])["steps"])


@pytest.mark.parametrize("length", [{"epochs": 2}, {"records": 640}])
def test_local_test_mode_replaces_any_length_with_one_batch(tmp_path, length):
    cfg = yaml.safe_load((TINY / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = length
    cfg["records_per_epoch"] = 384
    cfg["min_validation_period"] = {"epochs": 1} if "epochs" in length else {"records": 320}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", path, TINY, "--local", "--test",
                   "--local-dir", tmp_path / "local"])
    assert out.returncode == 0, out.stderr
    assert "Model definition test succeeded" in out.stdout + out.stderr
    assert "trained 1 batch" in " ".join((out.stdout + out.stderr).split())
