"""Two masters sharing one checkpoint storage: each numbers its experiments from 1, so
each's experiment 1, trial 1 must keep to its own files. Real masters: a master's
start-up removal of unfinished writes removes its own only."""

import json
import os
import time
import uuid

import pytest
import yaml

from determined.storage import scratch_tag
from master_testing import create_experiment, wait_until

pytestmark = pytest.mark.e2e


def _cluster_id(master) -> str:
    with open(os.path.join(master.data_dir, "cluster_id"), encoding="utf-8") as f:
        return f.read().strip()


def _config(tiny_dir, shared) -> dict:
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(shared)}
    return config


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
