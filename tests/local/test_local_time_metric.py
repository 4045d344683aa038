"""An adaptive_asha search with ``searcher.time_metric`` over a real Core API script
(tests/fixtures/time_metric/train.py) with ``det experiment create --local``: the
scripts train their own length, the searcher stops the weaker ones through
``should_preempt()``, and every trial ends COMPLETED, none resumed."""

import json
import pathlib

import pytest
import yaml

from det_cli_testing import run_det

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def script_dir():
    return pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "time_metric"


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
    # With the progress display (fed by the script's report_progress fractions).
    out = run_det(["e", "create", path, script_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json"])
    assert out.returncode == 0, out.stdout + out.stderr
    (trial,) = json.loads(out.stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 5
    assert "100.0%" in out.stderr


def _write(tmp_path, script_dir, name, entrypoint, searcher):
    config = yaml.safe_load((script_dir / "asha.yaml").read_text())
    config["entrypoint"] = entrypoint
    config["searcher"] = searcher
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_pbt_drives_a_core_api_script(tmp_path, script_dir):
    searcher = {"name": "pbt", "metric": "validation_loss", "population_size": 3,
                "num_rounds": 3, "length_per_round": {"batches": 4},
                "replace_function": {"truncate_fraction": 0.34},
                "explore_function": {"resample_probability": 0.3, "perturb_factor": 0.2}}
    path = _write(tmp_path, script_dir, "pbt", "python3 train.py --ops", searcher)
    out = run_det(["e", "create", path, script_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["state"] == "COMPLETED"
    trials = result["trials"]
    assert all(t["state"] == "COMPLETED" for t in trials), trials
    children = [t for t in trials if t["warm_start"]]
    assert children, "PBT cloned no trial"
    for child in children:  # each resumed from its parent's checkpoint, not from scratch
        logs = run_det(["t", "logs", str(child["trial_id"]), "--local-dir",
                        tmp_path / "local"]).stdout
        assert f"resumed from {child['warm_start']} at step" in logs
    assert max(t["batches"] for t in trials) == 12  # 3 rounds of 4 steps


def test_tpe_samples_a_time_metric_search(tmp_path, script_dir):
    searcher = {"name": "adaptive_asha", "metric": "validation_loss", "time_metric": "batches",
                "max_time": 16, "max_trials": 5, "divisor": 2, "max_rungs": 2,
                "mode": "aggressive", "sampler": "tpe"}
    path = _write(tmp_path, script_dir, "tpe",
                  "python3 train.py --steps 16 --validate-every 8", searcher)
    out = run_det(["e", "create", path, script_dir, "--local", "--local-dir",
                   tmp_path / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["state"] == "COMPLETED" and len(result["trials"]) == 5
    assert all(t["state"] == "COMPLETED" for t in result["trials"])


def test_classic_asha_over_scripts_on_one_slot(tmp_path, script_dir):
    # A script waiting for its rung is suspended (one slot) and exits 0: it resumes
    # later, at the steps it stopped at, without training its Train again.
    searcher = {"name": "adaptive_asha", "metric": "validation_loss", "max_trials": 3,
                "max_length": {"batches": 16}, "divisor": 2, "max_rungs": 2,
                "mode": "aggressive"}
    path = _write(tmp_path, script_dir, "classic", "python3 train.py --ops", searcher)
    out = run_det(["e", "create", path, script_dir, "--local", "--slots", "1",
                   "--local-dir", tmp_path / "local", "--json", "--no-progress"])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["state"] == "COMPLETED" and len(result["trials"]) == 3
    assert sorted(t["batches"] for t in result["trials"])[-1] == 16
