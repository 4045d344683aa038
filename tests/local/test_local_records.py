"""Local runs keep the master's records (``local.db``): every read command works with
``--local-dir`` and shows exactly what the run did."""

import json
import os
import sqlite3

import yaml

from det_cli_testing import run_det


def _read(local, *args, fmt="--json"):
    out = run_det([*args, "--local-dir", local, *([fmt] if fmt else [])])
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout) if fmt == "--json" else out.stdout


def test_every_read_command_shows_what_a_run_with_a_restart_did(tmp_path, tiny_dir):
    local = tmp_path / "local"
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["hyperparameters"]["crash_once_at_batch"] = 25
    cfg["data"] = {"crash_marker": str(tmp_path / "crashed")}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)
    (ran,) = run["trials"]
    assert ran["restarts"] == 1
    exp_id, trial_id = run["experiment_id"], ran["trial_id"]

    # det e list / describe: the experiment as the run ended it, its config.
    (listed,) = _read(local, "e", "list")
    assert (listed["id"], listed["state"], listed["searcher"]) == (exp_id, "COMPLETED", "single")
    (exp,) = _read(local, "e", "describe", str(exp_id), "--metrics")
    assert exp["state"] == "COMPLETED" and exp["config"]["hyperparameters"]["lr"]["val"] == 0.1
    (trial,) = exp["trials"]
    assert (trial["id"], trial["total_batches"], trial["restarts"], trial["best_validation"],
            trial["latest_checkpoint"], trial["state"]) == (
        trial_id, ran["batches"], 1, ran["best_metric"], ran["latest_checkpoint"], "COMPLETED")
    # Every workload once, though the trial redid 20..25 after its crash; upstream's steps
    # carry per-batch metrics and num_inputs.
    steps = [(s["total_batches"], bool(s["metrics"]), bool(s["validation"]))
             for s in trial["steps"]]
    assert steps == [(10, True, False), (20, True, True), (30, True, False), (40, True, True)]
    assert all(len(s["metrics"]["batch_metrics"]) == 10 and s["metrics"]["num_inputs"] == 160
               for s in trial["steps"])
    # The best validation of the run is the smaller of the two (the loss of this short,
    # randomly seeded run need not fall from batch 20 to 40).
    validated = [s["validation"]["metrics"]["validation_metrics"]["validation_loss"]
                 for s in trial["steps"] if s["validation"]]
    assert len(validated) == 2 and min(validated) == ran["best_metric"]
    csv_text = _read(local, "e", "describe", str(exp_id), fmt="--csv")
    assert csv_text.count("\n\n") == 2 and f"{exp_id},{trial_id},40," in csv_text

    # det e lt / lc / t describe agree with it.
    (row,) = _read(local, "e", "lt", str(exp_id))
    assert row["total_batches"] == 40 and row["best_validation"] == ran["best_metric"]
    checkpoints = _read(local, "e", "lc", str(exp_id))
    assert {c["uuid"] for c in checkpoints if c["state"] == "COMPLETED"} >= {run["best_checkpoint"]}
    (best,) = _read(local, "e", "lc", str(exp_id), "--best", "1")
    assert best["uuid"] == run["best_checkpoint"] and best["size_bytes"] > 0
    described = _read(local, "t", "describe", str(trial_id))
    assert [w["batches"] for w in described["workloads"]] == [40, 30, 20, 10]  # newest first

    # det t logs: the trial's output and the platform's lifecycle lines, each line once,
    # as the trial's log file has them.
    logs = _read(local, "t", "logs", str(trial_id), fmt=None).splitlines()
    log_file = (local / "experiments" / str(exp_id) / "trials" / f"{trial_id}.log")
    assert logs == log_file.read_text().splitlines()
    assert sum("[determined] Trial starts" in line for line in logs) == 1
    assert sum("[determined] Trial restarts (restart 1 of 2), restoring checkpoint" in line
               for line in logs) == 1, logs
    assert _read(local, "t", "logs", str(trial_id), "--tail", "1", fmt=None).strip() == logs[-1]
    # ... and says what the trial did: each validation's metrics, each checkpoint.
    assert sum("validation at 40 batches: validation_loss=" in line for line in logs) == 1
    assert sum(f"checkpoint {run['best_checkpoint']} at " in line for line in logs) == 1, logs

    # det e download / c download / t download copy the checkpoint files.
    _read(local, "e", "download", str(exp_id), "-o", tmp_path / "dl", fmt="-q")
    assert (tmp_path / "dl" / run["best_checkpoint"] / "metadata.json").exists()
    path = _read(local, "t", "download", str(trial_id), "--latest", "-o", tmp_path / "t",
                 fmt="-q").strip()
    assert os.path.exists(os.path.join(path, "metadata.json"))
    (tmp_path / "md").mkdir()
    _read(local, "e", "download-model-def", str(exp_id), "--output-dir", tmp_path / "md",
          fmt=None)
    assert (tmp_path / "md" / f"experiment_{exp_id}_model_def.tgz").stat().st_size > 0

    # The master's own schema and ids.
    with sqlite3.connect(local / "local.db") as db:
        assert db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 6


def test_unknown_ids_and_writes_get_one_line_errors(tmp_path, tiny_dir):
    local = tmp_path / "local"
    out = run_det(["e", "describe", "3", "--local-dir", local])
    assert out.returncode == 1 and "no local experiments in" in out.stderr
    out = run_det(["e", "list", "--local-dir", local, "--json"])
    assert out.returncode == 0 and json.loads(out.stdout) == []
    assert not local.exists()  # reading creates nothing
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local-dir", local,
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    out = run_det(["t", "logs", "99", "--local-dir", local])
    assert out.returncode == 1 and "trial 99 not found" in out.stderr
    assert "Traceback" not in out.stderr and "HTTP" not in out.stderr  # no request was made


def _old_directory(local, tiny_dir):
    """What an older version left: plain files per experiment."""
    exp_dir = local / "experiments" / "4"
    (exp_dir / "trials").mkdir(parents=True)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    from determined.local import prepare_config

    config = prepare_config(config, str(tiny_dir), str(local))
    (local / "ids.json").write_text(json.dumps({"experiment": 5, "trial": 8}))
    (exp_dir / "experiment.json").write_text(json.dumps({
        "id": 4, "state": "COMPLETED", "config": config, "model_dir": str(tiny_dir),
        "start_time": 1.7e9, "end_time": 1.7e9 + 60, "progress": 1.0,
        "trials": [{"trial_id": 7, "request_id": 1, "hparams": {"lr": 0.1}, "seed": 3,
                    "state": "COMPLETED", "batches": 40, "best_metric": 0.25,
                    "latest_checkpoint": None, "restarts": 1, "start_time": 1.7e9,
                    "end_time": 1.7e9 + 50}],
        "checkpoints": [], "checkpoint_storage": config["checkpoint_storage"]}))
    rows = [("training", 10), ("training", 20), ("validation", 20), ("training", 30),
            ("rollback", 20), ("training", 30), ("training", 40), ("validation", 40)]
    (exp_dir / "metrics.jsonl").write_text("".join(
        json.dumps({"trial_id": 7, "kind": k, "batches": b, "time": 1.7e9 + b,
                    "metrics": {"loss": b / 100} if k != "rollback" else {}}) + "\n"
        for k, b in rows))
    (exp_dir / "trials" / "7.log").write_text("old line 1\nold line 2\n")


def test_a_directory_of_an_older_version_is_imported(tmp_path, tiny_dir):
    local = tmp_path / "local"
    _old_directory(local, tiny_dir)
    (listed,) = _read(local, "e", "list")
    assert (listed["id"], listed["state"], listed["num_trials"]) == (4, "COMPLETED", 1)
    trial = _read(local, "t", "describe", "7", "--metrics")
    assert [(m["kind"], m["total_batches"]) for m in trial["metrics"]] == [
        ("training", 10), ("training", 20), ("validation", 20), ("training", 30),
        ("training", 40), ("validation", 40)]
    assert trial["best_validation"] == 0.25 and trial["restarts"] == 1
    assert _read(local, "t", "logs", "7", fmt=None).splitlines() == ["old line 1", "old line 2"]
    # New runs number their experiments and trials after the old ones.
    out = run_det(["e", "create", tiny_dir / "const.yaml", tiny_dir, "--local-dir", local,
                   "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    new = json.loads(out.stdout)
    assert new["experiment_id"] == 5 and new["trials"][0]["trial_id"] == 8
    assert [e["id"] for e in _read(local, "e", "list")] == [4, 5]
