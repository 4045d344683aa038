"""An adaptive_asha search with ``searcher.time_metric`` over a real Core API script
(tests/fixtures/time_metric/train.py) with ``det experiment create --local``: the
scripts train their own length, the searcher stops the weaker ones through
``should_preempt()``, and every trial ends COMPLETED, none resumed."""

import json

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def script_dir():
    from conftest import FIXTURES

    return FIXTURES / "time_metric"


def test_time_metric_asha_over_a_core_api_script(tmp_path, script_dir):
    out = run_det(["e", "create", script_dir / "asha.yaml", script_dir, "--local",
                   "--local-dir", tmp_path / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["state"] == "COMPLETED"
    trials = result["trials"]
    assert len(trials) == 6
    assert all(t["state"] == "COMPLETED" for t in trials), trials
    steps = sorted(t["batches"] for t in trials)
    assert steps[-1] == 32  # the best trial trained its whole length
    assert steps[0] < 32  # the searcher stopped others early
    stopped = [t for t in trials if t["batches"] < 32]
    logs = run_det(["t", "logs", str(stopped[0]["trial_id"]), "--local-dir", tmp_path / "local"])
    assert "stopped by the platform at step" in logs.stdout
    assert "resumed from" not in logs.stdout  # a stopped trial is never resumed
    listed = run_det(["e", "list", "--local-dir", tmp_path / "local", "--json"])
    assert json.loads(listed.stdout)[0]["progress"] == pytest.approx(1.0)


def test_single_without_max_length_runs_the_script_to_its_end(tmp_path, script_dir):
    config = yaml.safe_load((script_dir / "asha.yaml").read_text())
    config["entrypoint"] = "python3 train.py --steps 5 --validate-every 2"
    config["searcher"] = {"name": "single", "metric": "validation_loss"}
    config["hyperparameters"]["lr"] = 0.5
    path = tmp_path / "single.yaml"
    path.write_text(yaml.safe_dump(config))
    out = run_det(["e", "create", path, script_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = json.loads(out.stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 5
