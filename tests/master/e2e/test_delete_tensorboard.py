"""Deleting an experiment (`det e delete`) removes its TensorBoard event files from
checkpoint storage with its checkpoints, in every storage type (shared_fs, moto's S3
server, the GCS emulator), and leaves another experiment's alone. Real master, real
trials writing event files, the real `det`. A TensorBoard task over the experiment
refuses the deletion (409 naming it); event files that cannot be deleted are a 503
that keeps the experiment, and deleting it again finishes."""

import contextlib
import os
import re
import shutil
import subprocess
import uuid

import pytest
import yaml

from det_cli_testing import run_det, run_det_in_terminal
from determined.common.wording import counted
from determined.storage import build_storage
from master_testing import create_experiment, wait_for_state, wait_until
from object_store_testing import BUCKET, gcs_server, s3_server

pytestmark = pytest.mark.e2e

FINISHED = ["COMPLETED", "ERROR", "CANCELED"]


@pytest.fixture(params=["shared_fs", "s3", "gcs"])
def section(request, tmp_path, monkeypatch):
    """A checkpoint_storage section the master and its trials (and this test) can use."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    if request.param == "shared_fs":
        (tmp_path / "shared").mkdir()
        yield {"type": "shared_fs", "host_path": str(tmp_path / "shared")}
    elif request.param == "s3":
        with s3_server(str(tmp_path)) as served:  # its credentials in the section
            yield dict(served, prefix=prefix)
    else:
        with gcs_server(str(tmp_path)) as env:
            for k, v in env.items():  # the master (started after this) inherits it
                monkeypatch.setenv(k, v)
            yield {"type": "gcs", "bucket": BUCKET, "prefix": prefix}


def _cluster_id(master) -> str:
    with open(os.path.join(master.data_dir, "cluster_id"), encoding="utf-8") as f:
        return f.read().strip()


@contextlib.contextmanager
def _undeletable(path):
    """Entries of the directory ``path`` cannot be removed, even by root (the
    immutable flag; a read-only mode for others) until the block ends."""
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        os.chmod(path, 0o555)
    try:
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            os.chmod(path, 0o755)


def _two_experiments(master, section, tiny_dir):
    """Two completed experiments writing event files to ``section``: their ids."""
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = section
    with master.client() as api:
        ids = [create_experiment(api, config, tiny_dir) for _ in range(2)]
        for exp_id in ids:
            assert wait_for_state(api, exp_id, FINISHED, timeout=300)["state"] == "COMPLETED"
    return ids


def _event_dir(master, exp_id: int) -> str:
    return f"tensorboard/{_cluster_id(master)}/experiment/{exp_id}"


def _has_events(storage, path):
    """The event files under ``path``, checked to be some (one directory per trial)."""
    events = storage.list_dir(path)
    assert events and all(e.startswith("trial/") for e in events), events
    assert any("tfevents" in e for e in events), events
    return events


def test_delete_removes_the_experiments_tensorboard_files(section, master_factory, tiny_dir,
                                                          tmp_path):
    master = master_factory(slots=1)
    doomed, kept = _two_experiments(master, section, tiny_dir)
    storage = build_storage(section)
    doomed_dir, kept_dir = _event_dir(master, doomed), _event_dir(master, kept)
    events, kept_events = _has_events(storage, doomed_dir), _has_events(storage, kept_dir)
    before = tmp_path / "kept-before"
    storage.download_dir(kept_dir, str(before))

    with master.client() as api:  # the dry run says what a deletion removes
        r = api.delete(f"/experiments/{doomed}", params={"dry_run": "true"})
        assert r.status_code == 200, r.text
        assert r.json()["tensorboard_files"] == len(events) and r.json()["checkpoints"] >= 1
    code, text = run_det_in_terminal(["-m", master.url, "e", "delete", doomed],
                                     timeout=120.0, answer=("[y/N]", "n\n"))
    assert code == 1 and re.search(
        rf"Delete experiment {doomed}, its \d+ checkpoints?, its "
        rf"{counted(len(events), 'TensorBoard event file')} and all its records\?", text), text
    assert storage.list_dir(doomed_dir) == events  # nothing deleted
    out = run_det(["-m", master.url, "e", "delete", doomed, "--yes"], timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    files = counted(len(events), "TensorBoard event file")
    assert re.search(rf"^Deleted experiment {doomed} \(\d+ checkpoints? and {files} removed "
                     r"from storage\)$", out.stdout, re.M), out.stdout
    assert storage.list_dir(doomed_dir) == []
    if section["type"] == "shared_fs":
        assert not os.path.exists(os.path.join(section["host_path"], doomed_dir))
    # The other experiment's files are all there, unchanged.
    assert storage.list_dir(kept_dir) == kept_events
    after = tmp_path / "kept-after"
    storage.download_dir(kept_dir, str(after))
    for rel in kept_events:
        assert (after / rel).read_bytes() == (before / rel).read_bytes()
    with master.client() as api:
        assert api.get(f"/experiments/{doomed}").status_code == 404
        r = api.delete(f"/experiments/{kept}")  # the API says what went
        assert r.status_code == 200, r.text
        assert r.json()["deleted_tensorboard"] is True
        assert r.json()["deleted_tensorboard_files"] == len(kept_events)
    assert storage.list_dir(kept_dir) == []


def test_a_tensorboard_or_undeletable_files_keep_the_experiment(master_factory, tiny_dir,
                                                               tmp_path):
    """A TensorBoard task over it refuses the deletion (409 naming the task: it may be
    another user's, and would show runs vanishing); once it ended, event files that
    cannot be deleted are a 503 keeping the experiment, and a retry finishes."""
    (tmp_path / "shared").mkdir()
    section = {"type": "shared_fs", "host_path": str(tmp_path / "shared")}
    master = master_factory(slots=1)
    doomed, kept = _two_experiments(master, section, tiny_dir)
    storage = build_storage(section)
    doomed_dir = _event_dir(master, doomed)
    events = _has_events(storage, doomed_dir)
    with master.client() as api:
        r = api.post("/tasks", json={"kind": "tensorboard", "experiment_ids": [doomed]})
        assert r.status_code == 201, r.text
        board = r.json()["id"]
        for params in ({"dry_run": "true"}, {}):
            r = api.delete(f"/experiments/{doomed}", params=params)
            assert r.status_code == 409, r.text
            assert f"shown by TensorBoard {board}" in r.json()["error"], r.text
            assert f"det tensorboard kill {board}" in r.json()["error"], r.text
        assert storage.list_dir(doomed_dir) == events
        assert api.delete(f"/experiments/{kept}", params={"dry_run": "true"}).status_code == 200
        assert api.post(f"/tasks/{board}/kill").status_code == 200
        wait_until(lambda: api.delete(f"/experiments/{doomed}", params={
            "dry_run": "true"}).status_code == 200, 60, "the TensorBoard to end")
        assert api.get(f"/tasks/{board}").json()["state"] == "TERMINATED"

        trial_dir = os.path.join(section["host_path"], doomed_dir,
                                 *events[0].split("/")[:2])  # .../trial/<id>
        with _undeletable(trial_dir):
            r = api.delete(f"/experiments/{doomed}")
            assert r.status_code == 503, r.text
            assert "TensorBoard files of experiment" in r.json()["error"], r.text
            assert "the experiment is kept" in r.json()["error"], r.text
            assert api.get(f"/experiments/{doomed}").status_code == 200
        logs = api.get("/master/logs", params={"tail": 50}).json()["logs"]
        assert any("could not delete its TensorBoard files at "
                   f"{os.path.join(section['host_path'], doomed_dir)}" in line["line"]
                   for line in logs), logs
        r = api.delete(f"/experiments/{doomed}")  # again: it finishes
        assert r.status_code == 200, r.text
        assert r.json()["deleted_tensorboard"] is True
        assert api.get(f"/experiments/{doomed}").status_code == 404
    assert storage.list_dir(doomed_dir) == []
    assert storage.list_dir(_event_dir(master, kept))


def test_an_experiment_from_before_owners_loses_its_files_where_they_are(
        master_factory, tiny_dir, tmp_path):
    """An experiment made before the cluster id went into the paths keeps its event files
    in tensorboard/experiment/<id> (its trials and TensorBoards use them there): deleting
    it removes that directory, and nothing under the owners' directories."""
    (tmp_path / "shared").mkdir()
    section = {"type": "shared_fs", "host_path": str(tmp_path / "shared")}
    master = master_factory(slots=1)
    doomed, kept = _two_experiments(master, section, tiny_dir)
    master.stop()
    tensorboard = tmp_path / "shared" / "tensorboard"
    owned = tensorboard / _cluster_id(master) / "experiment" / str(doomed)
    (tensorboard / "experiment").mkdir()
    shutil.move(str(owned), str(tensorboard / "experiment" / str(doomed)))
    shutil.copytree(tensorboard / "experiment" / str(doomed), owned)  # another one's now
    with open(os.path.join(master.data_dir, "tensorboard_owner_layout"), "w") as f:
        f.write(f"{kept}\n")  # the first experiment of the owners' layout
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    storage = build_storage(section)
    legacy = f"tensorboard/experiment/{doomed}"
    events = _has_events(storage, legacy)
    with again.client() as api:
        r = api.delete(f"/experiments/{doomed}")
        assert r.status_code == 200, r.text
        assert r.json()["deleted_tensorboard_files"] == len(events)
    assert not (tensorboard / "experiment" / str(doomed)).exists()
    assert storage.list_dir(_event_dir(again, doomed)) == events  # not its files
    assert storage.list_dir(_event_dir(again, kept))
