"""A trial's unfinished checkpoint writes are removed when it starts (not only when a
master starts): its tagged ``.partial-*`` scratch directories, and complete checkpoints
of more batches than the one it resumes from that no record names. Other trials' files
and every recorded checkpoint stay; so do those of another local directory's (or
master's) experiment 1, trial 1."""

import json
import os
import time
import uuid

import yaml

from determined.common.identity import directory_id
from determined.storage import scratch_tag
from det_cli_testing import run_det


def _complete(root, experiment_id, trial_id, when, owner):
    path = root / str(uuid.uuid4())
    path.mkdir()
    (path / "state_dict.pth").write_bytes(b"x" * 10)
    (path / "metadata.json").write_text(json.dumps(
        {"experiment_id": experiment_id, "trial_id": trial_id, "end_time": when,
         "batch_number": 30, "owner": owner}))
    os.utime(path, (when, when))
    return path


def test_trial_start_removes_its_leftovers_only(tmp_path, tiny_dir):
    local = tmp_path / "local"
    root = local / "checkpoints"
    root.mkdir(parents=True)
    later = time.time() + 3600  # "written after the checkpoint the restart resumes from"
    owner, stranger = directory_id(str(local)), str(uuid.uuid4())
    assert owner != stranger
    mine_partial = root / f".partial-{scratch_tag(1, 1, owner)}{uuid.uuid4()}-0badf00d"
    others_partial = [root / f".partial-{scratch_tag(9, 9, owner)}{uuid.uuid4()}-0badf00d",
                      root / f".partial-{scratch_tag(1, 1, stranger)}{uuid.uuid4()}-0badf00d"]
    for p in (mine_partial, *others_partial):
        p.mkdir()
        (p / "state_dict.pth").write_bytes(b"half")
    mine_unregistered = _complete(root, 1, 1, later, owner)
    others_unregistered = [_complete(root, 9, 9, later, owner),
                           _complete(root, 1, 1, later, stranger),
                           _complete(root, 1, 1, later, None)]  # written before owners

    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg["hyperparameters"]["crash_once_at_batch"] = 25  # restart from the checkpoint at 20
    cfg["data"] = {"crash_marker": str(tmp_path / "crashed")}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    run = json.loads(out.stdout)
    assert run["experiment_id"] == 1 and run["trials"][0]["trial_id"] == 1
    assert run["trials"][0]["restarts"] == 1

    assert not mine_partial.exists() and not mine_unregistered.exists()
    assert all(p.exists() for p in others_partial + others_unregistered)
    assert not [p for p in root.iterdir()
                if p.name.startswith(".partial-" + scratch_tag(1, 1, owner))]
    # Every checkpoint the run registered and kept is complete and still there.
    listed = json.loads(run_det(["e", "lc", "1", "--local-dir", local, "--json"]).stdout)
    for c in listed:
        assert (root / c["uuid"] / "metadata.json").exists() == (c["state"] == "COMPLETED")
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert logs.count("removed an unfinished checkpoint write of this trial") == 2, logs


def test_restart_keeps_recorded_checkpoints_written_milliseconds_apart(tmp_path, tiny_dir):
    """A checkpoint after every batch, a hard crash, a restart: every checkpoint the local
    store lists as COMPLETED is still there."""
    local = tmp_path / "local"
    cfg = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    cfg.update(scheduling_unit=1, min_checkpoint_period={"batches": 1})
    cfg["checkpoint_storage"] = {"save_trial_latest": 100, "save_trial_best": 100}
    cfg["hyperparameters"]["crash_once_at_batch"] = 25
    cfg["data"] = {"crash_marker": str(tmp_path / "crashed")}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["trials"][0]["restarts"] == 1
    listed = json.loads(run_det(["e", "lc", "1", "--local-dir", local, "--json"]).stdout)
    completed = [c["uuid"] for c in listed if c["state"] == "COMPLETED"]
    assert len(completed) >= 39, listed
    root = local / "checkpoints"
    assert [u for u in completed if not (root / u / "metadata.json").exists()] == []
