"""Repeated SIGKILLs of a trial that checkpoints after every batch (checkpoints
milliseconds apart): every checkpoint the master lists as COMPLETED is still on disk
and loads; a restarted trial removes only the checkpoints no record names."""

import os
import signal

import torch

from determined.pytorch import load_trial_from_checkpoint_path
from determined.pytorch._controller import STATE_FILE
from determined.storage import read_metadata
from master_testing import create_experiment, trial_pid, wait_for_state, wait_until

KILLS = 4


def _batches(api, exp_id):
    trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
    return trials[0]["total_batches"] if trials else 0


def test_completed_checkpoints_survive_repeated_sigkills(master_factory, tmp_path, tiny_dir):
    master = master_factory(slots=1)
    root = tmp_path / "ckpts"
    root.mkdir()  # a host_path must exist (as in 0.13)
    config = {
        "entrypoint": "model_def:TinyTrial",
        "scheduling_unit": 1,
        "min_checkpoint_period": {"batches": 1},
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 120}},
        "max_restarts": KILLS + 2,
        # Keep every checkpoint: the test checks them all, GC would delete (and mark) most.
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root),
                               "save_trial_latest": 1000, "save_trial_best": 1000,
                               "save_experiment_best": 1000},
    }
    data_dir = master.data_dir
    with master.client() as api:
        exp_id = create_experiment(api, config, tiny_dir)
        killed = []
        for n in range(KILLS):
            # A fresh process, some checkpoints into its run (more than one second's
            # worth is not needed: they are milliseconds apart).
            wait_until(lambda: trial_pid(data_dir, exp_id, 1) not in (None, *killed),
                       what="the trial process to (re)start")
            start = _batches(api, exp_id)
            wait_until(lambda: _batches(api, exp_id) >= start + 8, timeout=120,
                       what="training to go on")
            pid = trial_pid(data_dir, exp_id, 1)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", exp
        assert exp["trials"][0]["restarts"] == KILLS
        listed = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]

    completed = [c for c in listed if c["state"] == "COMPLETED"]
    assert len(completed) >= 120 - KILLS, len(completed)
    missing = [c["uuid"] for c in completed if not (root / c["uuid"]).is_dir()]
    assert not missing, f"{len(missing)} of {len(completed)} COMPLETED checkpoints are gone"
    for c in completed:
        path = root / c["uuid"]
        assert read_metadata(str(path))["batch_number"] == c["total_batches"]
        state = torch.load(path / STATE_FILE, weights_only=False)
        assert state, c["uuid"]
    last = max(completed, key=lambda c: c["total_batches"])
    trial = load_trial_from_checkpoint_path(str(root / last["uuid"]))
    assert trial.context.models
    # Nothing of this trial is on disk that the master does not list.
    on_disk = {p.name for p in root.iterdir() if not p.name.startswith(".")}
    assert on_disk <= {c["uuid"] for c in listed} | {"tensorboard"}, on_disk
