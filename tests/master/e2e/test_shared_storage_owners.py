"""Two masters sharing one checkpoint storage: each numbers its experiments from 1, so
each's experiment 1, trial 1 must keep to its own files. Real masters, real trials,
real TensorBoard tasks: TensorBoard event files go under each master's cluster id (the
files of experiments from before that stay readable where they are), and a master's
start-up removal of unfinished writes removes its own only."""

import glob
import json
import os
import shutil
import time
import uuid

import httpx
import pytest
import yaml

from determined.storage import scratch_tag
from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = pytest.mark.e2e


def _cluster_id(master) -> str:
    with open(os.path.join(master.data_dir, "cluster_id"), encoding="utf-8") as f:
        return f.read().strip()


def _config(tiny_dir, shared) -> dict:
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(shared)}
    return config


def _loss_steps(directory) -> list:
    """The steps of ``Determined/loss`` in the event files under ``directory``."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    steps = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "*tfevents*"), recursive=True)):
        for event in EventFileLoader(path).Load():
            steps += [event.step for v in event.summary.value if v.tag == "Determined/loss"]
    return sorted(steps)


def _login(master) -> httpx.Client:
    token = httpx.post(master.url + "/api/v1/auth/login",
                       json={"username": "determined", "password": ""}).json()["token"]
    return httpx.Client(base_url=master.url, headers={"Authorization": f"Bearer {token}"},
                        timeout=60)


def _tensorboard_loss_steps(master, experiment_id: int) -> list:
    """Start a TensorBoard task of the experiment on ``master`` (as `det tensorboard
    start` does), and read its one run's ``Determined/loss`` steps through the proxy."""
    c = _login(master)
    r = c.post("/api/v1/tasks", json={"kind": "tensorboard", "experiment_ids": [experiment_id]})
    assert r.status_code == 201, r.text
    tb = r.json()["id"]
    try:
        (run,) = wait_until(lambda: (lambda r: r.status_code == 200 and r.json())(
            c.get(f"/proxy/{tb}/data/runs")), 180, "the TensorBoard's run")

        def steps():
            r = c.get(f"/proxy/{tb}/data/plugin/scalars/scalars",
                      params={"run": run, "tag": "Determined/loss"})
            return r.status_code == 200 and r.json() and sorted(s for _, s, _ in r.json())

        return wait_until(steps, 120, "the run's Determined/loss")
    finally:
        c.post(f"/api/v1/tasks/{tb}/kill")


def test_two_masters_keep_their_tensorboard_files_apart(master_factory, tmp_path, tiny_dir):
    shared = tmp_path / "shared"
    shared.mkdir()
    first, second = master_factory(slots=1), master_factory(slots=1)
    for master in (first, second):
        with master.client() as api:
            assert create_experiment(api, _config(tiny_dir, shared), tiny_dir) == 1
    for master in (first, second):
        with master.client() as api:
            exp = wait_for_state(api, 1, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
            assert exp["state"] == "COMPLETED", exp
            assert [t["id"] for t in exp["trials"]] == [1]
    owners = [_cluster_id(first), _cluster_id(second)]
    assert owners[0] != owners[1]
    # Each master's trial 1 synced its own files, under its own cluster id; nothing went
    # to the shared tensorboard/experiment/1/trial/1 both would have written into.
    tensorboard = shared / "tensorboard"
    assert sorted(os.listdir(tensorboard)) == sorted(owners)
    for owner in owners:
        assert _loss_steps(tensorboard / owner / "experiment" / "1" / "trial" / "1") == \
            list(range(1, 41))
    # The second master's TensorBoard shows its own trial's run, once.
    assert _tensorboard_loss_steps(second, 1) == list(range(1, 41))

    # An experiment from before owners went into the paths (the master's first start of
    # this version then): its files are in tensorboard/experiment/1/trial/1, where its
    # TensorBoard finds them. Made so: the second master's files moved there, its
    # record of where the owner's paths start removed.
    second.stop()
    legacy = tensorboard / "experiment" / "1" / "trial" / "1"
    legacy.parent.mkdir(parents=True)
    shutil.move(str(tensorboard / owners[1] / "experiment" / "1" / "trial" / "1"), legacy)
    os.remove(os.path.join(second.data_dir, "tensorboard_owner_layout"))
    again = master_factory(slots=1, data_dir=second.data_dir, port=second.port)
    assert _tensorboard_loss_steps(again, 1) == list(range(1, 41))
    with open(os.path.join(again.data_dir, "tensorboard_owner_layout")) as f:
        assert f.read().strip() == "2"  # its next experiment's files go under its owner
    assert _loss_steps(tensorboard / owners[0] / "experiment" / "1" / "trial" / "1") == \
        list(range(1, 41))


def test_master_start_removes_only_its_own_unfinished_writes(master_factory, tmp_path,
                                                            tiny_dir):
    """The start-up removal (no remote agents, so no grace) left another master's
    scratch directories (of a trial maybe still writing) and checkpoints of its
    experiment 1 (which this master has no record of) in place only when they were
    younger than 10 minutes: now it keeps them, and owner-less ones, whatever their age."""
    shared = tmp_path / "shared"
    shared.mkdir()
    master = master_factory(slots=1)
    with master.client() as api:
        assert create_experiment(api, _config(tiny_dir, shared), tiny_dir,
                                 activate=False) == 1
    mine, other = _cluster_id(master), str(uuid.uuid4())
    master.stop()
    old = time.time() - 3600
    removed, kept = [], []
    for owner in (mine, other, ""):
        path = shared / f".partial-{scratch_tag(1, 1, owner)}{uuid.uuid4()}-0badf00d"
        (removed if owner == mine else kept).append(path)
    kept.append(shared / f".partial-{uuid.uuid4()}-0badf00d")  # before trials were tagged
    for owner in (mine, other, None):
        path = shared / str(uuid.uuid4())
        (removed if owner == mine else kept).append(path)
        path.mkdir()
        (path / "metadata.json").write_text(json.dumps(
            {"experiment_id": 1, "trial_id": 1, "batch_number": 10,
             **({"owner": owner} if owner else {})}))
    for path in removed + kept:
        path.mkdir(exist_ok=True)
        (path / "weights").write_bytes(b"x")
        os.utime(path, (old, old))
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    wait_until(lambda: not any(p.exists() for p in removed), 60, "its own leftovers removed")
    time.sleep(2)  # the rest of the same pass
    assert [p for p in kept if not p.exists()] == []
    assert again.proc.poll() is None
