"""The model registry's versions on the REST API, as the web UI's model page reads them:
each version names its experiment's searcher metric and the checkpoint's value of it."""

import os
import pathlib

import pytest
import yaml

from determined.master.db import Store
from master_testing import MasterProcess, create_experiment, wait_for_state

TINY = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"
NO_VALIDATION = "0e4a1f3c-1d2b-4c5d-8e6f-7a8b9c0d1e2f"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = MasterProcess(str(tmp_path_factory.mktemp("registry_master")), slots=1)
    try:
        yield m.start(timeout=120)
    finally:
        m.stop()


@pytest.fixture(scope="module")
def api(master):
    with master.client() as c:
        yield c


@pytest.fixture(scope="module")
def finished(api):
    """A tiny experiment that ran to the end: its checkpoints and trial."""
    config = yaml.safe_load((TINY / "const.yaml").read_text())
    config["searcher"] = dict(config["searcher"], metric="accuracy", smaller_is_better=False)
    exp_id = create_experiment(api, config, TINY)
    wait_for_state(api, exp_id, ["COMPLETED"], timeout=180)
    return api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]


@pytest.mark.timeout(300)
def test_versions_carry_the_searcher_metric_and_its_value(api, finished):
    last = max(finished, key=lambda c: c["total_batches"])
    assert api.post("/models/digits", json={"description": "d"}).status_code == 201
    registered = api.post("/models/digits/versions", json={"checkpoint_uuid": last["uuid"]})
    assert registered.status_code == 201, registered.text
    metric = registered.json()["searcher_metric"]
    assert metric["name"] == "accuracy" and metric["smaller_is_better"] is False
    assert isinstance(metric["value"], float)
    assert metric["value"] == last["validation"]["accuracy"]
    versions = api.get("/models/digits/versions").json()["versions"]
    assert [v["searcher_metric"] for v in versions] == [metric]
    assert api.get("/models/digits/versions/1").json()["searcher_metric"] == metric


@pytest.mark.timeout(300)
def test_a_checkpoint_without_a_validation_has_no_value(api, master, finished):
    store = Store("sqlite:///" + os.path.join(master.data_dir, "master.db"))
    try:
        store.add_checkpoint(NO_VALIDATION, finished[0]["trial_id"], 7, {}, {},
                             "torch", "saved_model")
    finally:
        store.close()
    assert api.post("/models/bare", json={}).status_code == 201
    version = api.post("/models/bare/versions", json={"checkpoint_uuid": NO_VALIDATION})
    assert version.status_code == 201, version.text
    assert version.json()["searcher_metric"] == {
        "name": "accuracy", "smaller_is_better": False, "value": None}


@pytest.mark.timeout(300)  # run alone, it starts the module's master too
def test_bad_requests_get_a_4xx_naming_what_is_wrong(api):
    missing = api.get("/models/no-such-model/versions")
    assert missing.status_code == 404 and "no-such-model" in missing.json()["error"]
    assert api.post("/models/alone", json={}).status_code == 201
    absent = "6f1c2d3e-4a5b-4c6d-9e7f-8a9b0c1d2e3f"
    unknown = api.post("/models/alone/versions", json={"checkpoint_uuid": absent})
    assert unknown.status_code == 404 and absent in unknown.json()["error"]
    malformed = api.post("/models/alone/versions", json={"checkpoint_uuid": "nope"})
    assert malformed.status_code == 400, malformed.text
    assert "checkpoint_uuid" in malformed.text and "UUID form" in malformed.text
    assert api.get("/models/alone/versions", params={"order_by": "up"}).status_code == 400
    negative = api.get("/models/alone/versions/-1")
    assert negative.status_code == 400 and "version" in negative.json()["error"]
