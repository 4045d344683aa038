"""After a trial is SIGKILLed and resumed from a checkpoint, ``min_validation_period``
keeps the uninterrupted schedule (validations at multiples of the period, counted from
batch 0, not from the checkpoint it resumed at)."""

import json

import yaml

from det_cli_testing import run_det


def test_validation_schedule_after_a_sigkill_and_restore(tmp_path, tiny_dir):
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["scheduling_unit"] = 5
    cfg["min_validation_period"] = {"batches": 30}
    cfg["min_checkpoint_period"] = {"batches": 10}
    cfg["searcher"]["max_length"] = {"batches": 60}
    cfg["hyperparameters"]["sigkill_once_at_batch"] = 25
    cfg["data"] = {"crash_marker": str(tmp_path / "killed")}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    (trial,) = json.loads(out.stdout)["trials"]
    assert (tmp_path / "killed").exists() and trial["restarts"] == 1
    logs = run_det(["t", "logs", str(trial["trial_id"]), "--local-dir", local]).stdout
    assert "signal 9" in logs.lower() or "sigkill" in logs.lower(), logs
    assert "restoring checkpoint" in logs and "at 20 batches" in logs, logs
    described = json.loads(run_det(["t", "describe", str(trial["trial_id"]), "--metrics",
                                    "--local-dir", local, "--json"]).stdout)
    validated = [m["total_batches"] for m in described["metrics"] if m["kind"] == "validation"]
    # Uninterrupted: 30 and 60. Counting the period from the restore (20) would give 50.
    assert validated == [30, 60]
    trained = [m["total_batches"] for m in described["metrics"] if m["kind"] == "training"]
    assert trained == list(range(5, 65, 5))  # every workload once, none lost or doubled
