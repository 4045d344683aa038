"""Checkpoint GC (when an experiment ends, or on a GC policy change) and a master
SIGKILLed in the middle of it: a checkpoint a model version names is kept, no record
stays COMPLETED without its files, and the restarted master finishes deleting the
files of checkpoints the old one had marked DELETED.

A master killed between marking and deleting is reproduced by the state such a kill
leaves: a copy of one doomed checkpoint taken before GC is put back after GC marked it
DELETED and removed it, while the master is SIGKILLed."""

import shutil
import threading

import httpx

from master_testing import MasterProcess, create_experiment, slow_model_dir, wait_for_state, \
    wait_until


def _on_disk(root):
    return {p.name for p in root.iterdir() if p.name[0] != "." and p.name != "tensorboard"}


def _checkpoints(api, exp_id):
    return api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]


def test_gc_keeps_model_versions_and_a_restart_finishes_it(master_factory, tmp_path, tiny_dir):
    master = master_factory(slots=1)
    root = tmp_path / "ckpts"
    root.mkdir()
    hold = tmp_path / "go"
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 20,
        "min_checkpoint_period": {"batches": 20}, "min_validation_period": {"batches": 100},
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2,
                            "hold_file": str(hold), "hold_after": 40},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 100}},
        # The defaults: the latest and the best (both at batch 100) are kept.
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root)},
    }
    with master.client() as api:
        exp_id = create_experiment(api, config, slow_model_dir(tiny_dir, tmp_path))
        wait_until(lambda: len(_checkpoints(api, exp_id)) >= 2, timeout=120,
                   what="checkpoints at batches 20 and 40")
        first, second = _checkpoints(api, exp_id)[:2]
        assert api.post("/models/kept", json={}).status_code == 201
        r = api.post("/models/kept/versions", json={"checkpoint_uuid": first["uuid"]})
        assert r.status_code == 201, r.text
        aside = tmp_path / "aside"
        shutil.copytree(root / second["uuid"], aside)
        hold.touch()
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        states = {c["uuid"]: c["state"] for c in _checkpoints(api, exp_id)}
        assert states[first["uuid"]] == "COMPLETED", states
        assert states[second["uuid"]] == "DELETED", states
        wait_until(lambda: _on_disk(root) == {u for u, s in states.items() if s == "COMPLETED"},
                   timeout=30, what="GC to delete the checkpoints it marked")
    master.sigkill()
    shutil.copytree(aside, root / second["uuid"])  # as if the kill came before its removal
    again = MasterProcess(master.data_dir, 1, master.port).start()
    try:
        wait_until(lambda: not (root / second["uuid"]).exists(), timeout=30,
                   what="the restarted master to finish the deletion")
        with again.client() as api:
            after = {c["uuid"]: c["state"] for c in _checkpoints(api, exp_id)}
        assert after == states
        assert (root / first["uuid"] / "metadata.json").is_file()
        kept = {u for u, s in after.items() if s == "COMPLETED"}
        assert _on_disk(root) == kept
    finally:
        again.stop()


def test_master_sigkill_while_a_gc_policy_change_deletes(master_factory, tmp_path, tiny_dir):
    """`det e set gc-policy` on a finished experiment, the master SIGKILLed while it
    deletes: no checkpoint is left COMPLETED without its files, and the restarted
    master deletes the rest of those it marked."""
    master = master_factory(slots=1)
    root = tmp_path / "ckpts"
    root.mkdir()
    keep_all = {"save_trial_latest": 1000, "save_trial_best": 1000, "save_experiment_best": 1000}
    config = {
        "entrypoint": "model_def:TinyTrial", "scheduling_unit": 1,
        "min_checkpoint_period": {"batches": 1},
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 150}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(root), **keep_all},
    }
    with master.client() as api:
        exp_id = create_experiment(api, config, tiny_dir)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
        assert exp["state"] == "COMPLETED", exp
    assert len(_on_disk(root)) == 150
    policy = {k: 0 for k in keep_all}
    url = f"{master.url}/api/v1/experiments/{exp_id}/gc-policy"
    sender = threading.Thread(target=_patch, args=(master, url, policy), daemon=True)
    sender.start()
    wait_until(lambda: len(_on_disk(root)) < 120, timeout=60, what="GC to start deleting")
    master.sigkill()
    again = MasterProcess(master.data_dir, 1, master.port).start()
    try:
        with again.client() as api:
            listed = _checkpoints(api, exp_id)
            completed = {c["uuid"] for c in listed if c["state"] == "COMPLETED"}
            assert completed <= _on_disk(root), "COMPLETED checkpoints without files"
            wait_until(lambda: _on_disk(root) == completed, timeout=30,
                       what="the restarted master to finish the deletions")
    finally:
        again.stop()


def _patch(master, url, policy):
    try:
        with master.client() as api:
            api.patch(url, json=policy)
    except httpx.HTTPError:
        pass  # the master died first
