"""The web UI's API (``/api/v1/ui/...``) and the UI's serving, against a real master."""

import json
import math
import os
import threading
import time

import httpx
import pytest
import sqlalchemy as sa
import yaml

from determined.master import webui
from determined.master.db import Store
from master_testing import create_experiment, wait_for_state


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    from master_testing import MasterProcess

    m = MasterProcess(str(tmp_path_factory.mktemp("ui_master")), slots=2)
    try:
        yield m.start(timeout=120)
    finally:
        m.stop()


@pytest.fixture(scope="module")
def api(master):
    with master.client() as c:
        yield c


@pytest.fixture(scope="module")
def store(master):
    s = Store("sqlite:///" + os.path.join(master.data_dir, "master.db"))
    yield s
    s.close()


def _config(tiny_dir, **changes):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(changes)
    return config


@pytest.fixture(scope="module")
def experiments(api, tiny_dir_module):
    """Three paused experiments and one finished (and archived) one."""
    ids = {}
    for name, labels in (("alpha", ["a", "shared"]), ("beta", ["b"]), ("gamma", ["shared"])):
        ids[name] = create_experiment(api, _config(tiny_dir_module, description=name,
                                                   labels=labels), tiny_dir_module,
                                      activate=False)
    done = create_experiment(api, _config(tiny_dir_module, description="done run"),
                             tiny_dir_module)
    wait_for_state(api, done, ["COMPLETED"])
    assert api.post(f"/experiments/{done}/archive").status_code == 200
    ids["done"] = done
    return ids


@pytest.fixture(scope="module")
def tiny_dir_module():
    import pathlib

    return pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pytorch"


def test_list_filters_sort_and_paginate(api, experiments):
    r = api.get("/ui/experiments").json()
    assert [e["id"] for e in r["experiments"]] == sorted(
        (experiments[n] for n in ("alpha", "beta", "gamma")), reverse=True)
    assert r["total"] == 3 and r["owners"] == ["determined"] and "shared" in r["labels"]
    row = r["experiments"][0]
    for key in ("description", "labels", "owner", "state", "progress", "best_metric",
                "start_time", "duration", "num_trials", "metric"):
        assert key in row
    by = lambda **q: [e["description"] for e in api.get("/ui/experiments", params=q).json()[
        "experiments"]]
    assert by(label="shared", sort="description", order="asc") == ["alpha", "gamma"]
    assert by(text="BET") == ["beta"]
    assert by(state="PAUSED", sort="description", order="desc", limit=2) == ["gamma", "beta"]
    assert by(state="PAUSED", sort="description", order="desc", limit=2, offset=2) == ["alpha"]
    assert by(archived="true") == ["done run"]
    assert len(by(archived="any")) == 4
    assert by(owner="admin") == []
    done = api.get("/ui/experiments", params={"archived": "true"}).json()["experiments"][0]
    assert done["state"] == "COMPLETED" and done["num_trials"] == 1
    assert isinstance(done["best_metric"], float) and done["progress"] == 1.0
    bad = api.get("/ui/experiments", params={"sort": "password"})
    assert bad.status_code == 400 and "sort" in bad.text


def test_experiment_detail_and_series_match_stored_metrics(api, experiments):
    exp_id = experiments["done"]
    d = api.get(f"/ui/experiments/{exp_id}").json()
    assert yaml.safe_load(d["config_yaml"]) == d["config"]
    assert d["metric_names"]["validation"] == ["accuracy", "validation_loss"]
    assert d["step_unit"] == "batch"  # a Trial class's steps are batches
    trial = d["trials"][0]
    stored = api.get(f"/trials/{trial['id']}").json()["metrics"]
    s = api.get(f"/ui/experiments/{exp_id}/metrics",
                params={"metric": "validation_loss"}).json()["series"][0]
    expected = [(m["total_batches"], m["metrics"]["validation_loss"]) for m in stored
                if m["kind"] == "validation"]
    assert list(zip(s["batches"], s["values"])) == expected
    assert s["records_per_batch"] == 16 and all(t >= 0 for t in s["time"])
    assert api.get(f"/ui/experiments/{exp_id}/metrics",
                   params={"metric": "loss", "trial_ids": "x"}).status_code == 400
    assert api.get("/ui/experiments/99999").status_code == 404


def test_detail_has_the_config_as_submitted_for_the_fork(api, store, tiny_dir_module):
    """The fork tab starts from the config as POSTed (YAML text, as the CLI sends it),
    without the defaults the master fills in; an experiment stored without one (made
    before it was kept) falls back to the expanded config."""
    text = (tiny_dir_module / "const.yaml").read_text() + "description: as submitted\n"
    exp_id = create_experiment(api, text, tiny_dir_module, activate=False)
    d = api.get(f"/ui/experiments/{exp_id}").json()
    assert d["original_config"] == yaml.safe_load(text)
    assert yaml.safe_load(d["original_config_yaml"]) == yaml.safe_load(text)
    assert list(d["original_config"]) == list(yaml.safe_load(text))  # the user's order
    for default in ("records_per_epoch:", "source_trial_id:", "experiment_seed:", "data:"):
        assert default in d["config_yaml"] and default not in d["original_config_yaml"]
    with store._engines.write.begin() as conn:
        conn.execute(sa.text("UPDATE experiments SET original_config = NULL WHERE id = :id"),
                     {"id": exp_id})
    old = api.get(f"/ui/experiments/{exp_id}").json()
    assert old["original_config"] == old["config"] == d["config"]
    assert old["original_config_yaml"] == old["config_yaml"]
    api.post(f"/experiments/{exp_id}/kill")


def test_a_million_batch_trial_is_downsampled_keeping_its_shape(api, experiments, store):
    exp_id = experiments["done"]
    trial_id = api.get(f"/ui/experiments/{exp_id}").json()["trials"][0]["id"]
    rows, per_batch = [], []
    for k in range(10_000):  # 10,000 workloads of 100 batches: 1,000,000 batches
        batch = [{"loss": 2.0 + math.sin((k * 100 + i) / 20_000.0)} for i in range(100)]
        if k == 4321:
            batch[7]["loss"] = 50.0  # a spike the chart must keep
        per_batch.extend(b["loss"] for b in batch)
        rows.append((trial_id, "training", 1000 + (k + 1) * 100,
                     {"loss": sum(b["loss"] for b in batch) / 100}, batch))
    store.add_metrics_bulk(rows)
    t0 = time.monotonic()
    s = api.get(f"/ui/trials/{trial_id}/metrics",
                params={"metric": "loss", "per_batch": True, "max_points": 2000}).json()
    elapsed = time.monotonic() - t0
    assert s["count"] == 1_000_040  # the trial's own 40 batches and ours
    assert len(s["values"]) <= 2000 and max(s["values"]) == 50.0
    assert any(abs(v - min(per_batch)) < 1e-9 for v in s["values"])
    assert s["batches"][-1] == 1_001_000 and s["values"][-1] == pytest.approx(per_batch[-1])
    w = api.get(f"/ui/experiments/{exp_id}/metrics",
                params={"metric": "loss", "kind": "training"}).json()["series"][0]
    assert w["count"] == 10_004 and len(w["batches"]) <= 2000 and w["batches"][-1] == 1_001_000
    print(f"per-batch series of 1,000,000 batches: {elapsed:.2f} s")


def _read_events(response, out, stop):
    name = None
    try:
        for line in response.iter_lines():
            if stop.is_set():
                return
            if line.startswith(": connected"):  # the feed has read the state to follow
                out.append((time.monotonic(), "connected", None))
            elif line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                out.append((time.monotonic(), name, json.loads(line[5:])))
    except httpx.HTTPError:  # the test closed the stream
        pass


def test_live_channel_sends_state_changes_metrics_and_logs(master, api, experiments, store):
    exp_id = experiments["alpha"]
    trial_id = None
    api.post(f"/experiments/{exp_id}/activate")
    deadline = time.monotonic() + 30
    while trial_id is None and time.monotonic() < deadline:
        trials = api.get(f"/experiments/{exp_id}/trials").json()["trials"]
        trial_id = trials[0]["id"] if trials else None
        time.sleep(0.1)
    wait_for_state(api, exp_id, ["COMPLETED"])
    events, stop = [], threading.Event()
    after = api.get(f"/ui/experiments/{exp_id}").json()["last_metric_id"]
    with httpx.Client(base_url=master.url, timeout=30) as c:
        params = {"experiments": True, "experiment_id": exp_id, "trial_id": trial_id,
                  "metrics_after": after, "logs_after": 10**9}
        with c.stream("GET", "/api/v1/ui/events", params=params) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            reader = threading.Thread(target=_read_events, args=(response, events, stop),
                                      daemon=True)
            reader.start()
            _wait_for_event(events, "connected", lambda _: True, "the connection")
            # The first poll is the state later changes are measured against: a page
            # loads it itself, so the trials are not sent again.
            assert not [name for _, name, _ in events if name == "trials"], events
            t0 = time.monotonic()
            store.add_training_metrics(trial_id, 5_000_000, {"loss": 0.125})
            assert api.patch(f"/experiments/{exp_id}", json={"description": "renamed"}
                             ).status_code == 200
            deadline = t0 + 60  # generous: a loaded machine; the wait ends once both came
            while time.monotonic() < deadline:
                names = {name for t, name, _ in events if t >= t0}
                if {"metrics", "experiments"} <= names:
                    break
                time.sleep(0.05)
            stop.set()
    metrics = [(t, d) for t, name, d in events if name == "metrics"]
    assert metrics, events
    t_metric, rows = metrics[-1]
    assert rows[-1]["total_batches"] == 5_000_000 and rows[-1]["metrics"] == {"loss": 0.125}
    assert t_metric - t0 < 30.0  # while the stream stayed open (the master polls every 0.5 s)
    changed = [d for _, name, d in events if name == "experiments"]
    assert any(e["id"] == exp_id and e["description"] == "renamed"
               for d in changed for e in d["changed"])


def test_live_channel_tails_without_start_ids_begin_when_the_stream_opens(api, experiments,
                                                                          master, store):
    """A page may open the channel before it loads: without ``metrics_after`` and
    ``logs_after`` the tails send what is stored after ``: connected``, none of the rows
    stored before (a finished trial's many rows are not sent again)."""
    exp_id = experiments["done"]
    trial_id = api.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["id"]
    before = api.get(f"/ui/trials/{trial_id}/workloads").json()
    assert before["total"] > 0 and before["last_log_id"] > 0
    events, stop = [], threading.Event()
    with httpx.Client(base_url=master.url, timeout=30) as c:
        with c.stream("GET", "/api/v1/ui/events", params={"trial_id": trial_id}) as response:
            assert response.status_code == 200
            threading.Thread(target=_read_events, args=(response, events, stop),
                             daemon=True).start()
            _wait_for_event(events, "connected", lambda _: True, "the connection")
            store.add_training_metrics(trial_id, 7_000_000, {"loss": 0.5})
            store.add_logs(trial_id, ["a line after the stream opened"])
            rows = _wait_for_event(events, "metrics", lambda _: True, "the new row")
            lines = _wait_for_event(events, "logs", lambda _: True, "the new line")
            # The trial's own channel sends its whole error (its page's failure box).
            error = "Trial failed (exit code 1): its last output:\n" + "x" * 1500 + "\nlast"
            try:
                store.update_trial(trial_id, error=error)
                trials = _wait_for_event(events, "trials", lambda _: True, "the error")
            finally:
                store.update_trial(trial_id, error=None)
            stop.set()
    assert [r["total_batches"] for r in rows] == [7_000_000]
    assert [line["line"] for line in lines] == ["a line after the stream opened"]
    assert [(t["error"], t["error_summary"]) for t in trials] == [
        (error, "Trial failed (exit code 1): last")]
    assert api.get("/ui/events", params={"metrics_after": -1}).status_code == 400


def _wait_for_event(events, name, found, what):
    """The first ``name`` event's data for which ``found(data)`` holds (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        for _, n, data in list(events):
            if n == name and found(data):
                return data
        assert time.monotonic() < deadline, f"no {name} event with {what}: {events}"
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_live_channel_follows_the_model_registry(master, api, experiments, store):
    uuid = next(c["uuid"] for c in api.get(f"/experiments/{experiments['done']}/checkpoints")
                .json()["checkpoints"] if c["state"] == "COMPLETED")
    assert api.post("/models/live one", json={"description": "first"}).status_code == 201
    assert api.get("/ui/events", params={"model": "no such model"}).status_code == 404
    events, stop = [], threading.Event()
    with httpx.Client(base_url=master.url, timeout=30) as c:
        params = {"models": True, "model": "live one"}
        with c.stream("GET", "/api/v1/ui/events", params=params) as response:
            assert response.status_code == 200
            threading.Thread(target=_read_events, args=(response, events, stop),
                             daemon=True).start()
            _wait_for_event(events, "connected", lambda _: True, "the connection")

            assert api.post("/models/other", json={}).status_code == 201
            _wait_for_event(events, "models", lambda d: [m["name"] for m in d["changed"]]
                            == ["other"], "the new model")

            version = api.post("/models/live one/versions", json={"checkpoint_uuid": uuid})
            assert version.status_code == 201, version.text
            listed = _wait_for_event(
                events, "models", lambda d: any(m["name"] == "live one" and m["num_versions"]
                                                == 1 for m in d["changed"]), "the version")
            assert listed["removed"] == []
            page = _wait_for_event(events, "model", lambda d: d["versions"], "the version")
            assert page["model"]["name"] == "live one" and page["model"]["num_versions"] == 1
            assert [(v["version"], v["checkpoint"]["uuid"]) for v in page["versions"]] == [
                (1, uuid)]
            assert page == api.get("/models/live one/versions").json()

            assert api.patch("/models/live one", json={"metadata": {"stage": "prod"}}
                             ).status_code == 200
            _wait_for_event(events, "model", lambda d: d["model"] and d["model"]["metadata"]
                            == {"stage": "prod"}, "the new metadata")

            store.delete_model("other")
            store.delete_model("live one")
            _wait_for_event(events, "models", lambda d: "live one" in d["removed"],
                            "the deleted model")
            _wait_for_event(events, "models", lambda d: "other" in d["removed"],
                            "the other deleted model")
            _wait_for_event(events, "model", lambda d: d["model"] is None, "the deletion")
            stop.set()
    # Nothing but these changes was sent: no model was reported before it changed.
    names = [m["name"] for _, n, d in events if n == "models" for m in d["changed"]]
    assert names[0] == "other" and set(names) == {"other", "live one"}, events


def test_logs_search_matches_the_lines_as_the_ui_shows_them(api, experiments, store):
    """The log view shows a traceback's paths in the model directory (``File
    "model_def.py"``, webui/src/failure.ts); its search finds what it shows, not the
    trial's working directory it left out."""
    exp_id = experiments["done"]
    trial_id = api.get(f"/ui/experiments/{exp_id}").json()["trials"][0]["id"]
    workdir = "/tmp/det-workdirs/exp4-trial7-pid3107.1f2a3.effffffc"
    store.add_logs(trial_id, [f"[determined] Trial starts in {workdir}",
                              f'  File "{workdir}/model_def.py", line 9, in train_batch',
                              f"ValueError: no rows in {workdir}/train.csv"])

    def found(search):
        return [line["line"] for line in api.get(f"/ui/trials/{trial_id}/logs", params={
            "search": search}).json()["logs"]]

    assert found('File "model_def.py"') == [
        f'  File "{workdir}/model_def.py", line 9, in train_batch']
    assert found("ROWS IN TRAIN.CSV") == [f"ValueError: no rows in {workdir}/train.csv"]
    # Shown as written where it says where the trial runs; left out of the traceback.
    assert found("pid3107") == [f"[determined] Trial starts in {workdir}"]
    assert len(api.get(f"/ui/trials/{trial_id}/logs", params={
        "search": "exp4-trial7", "limit": 1}).json()["logs"]) == 1


def test_logs_search_and_cluster(api, experiments, store):
    exp_id = experiments["done"]
    trial_id = api.get(f"/ui/experiments/{exp_id}").json()["trials"][0]["id"]
    store.add_logs(trial_id, ["epoch 1 <script>x</script>", "needle 100% found_", "other"])
    found = api.get(f"/ui/trials/{trial_id}/logs", params={"search": "NEEDLE 100%"}).json()
    assert [l["line"] for l in found["logs"]] == ["needle 100% found_"]
    assert api.get(f"/ui/trials/{trial_id}/logs", params={"search": "d_"}).json()["logs"][0][
        "line"] == "needle 100% found_"
    # The trial page's live tail starts after the newest line, not at the first.
    newest = api.get(f"/ui/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"][-1]
    assert newest["line"] == "other"
    assert api.get(f"/ui/trials/{trial_id}/workloads").json()["last_log_id"] == newest["id"]
    c = api.get("/ui/cluster").json()
    assert c["slots"] == 2 and len(c["agents"][0]["slot_tasks"]) == 2
    assert 0.0 <= c["utilization"] <= 1.0


def test_cluster_names_the_task_on_a_slot(api):
    """A slot held by a command names the task as the task list does (not the scheduler's
    ``task-<id>``), and its kind: the cluster page links it."""
    task = api.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 120", "description": "holds a slot"}}).json()
    try:
        def held():
            slots = [s for a in api.get("/ui/cluster").json()["agents"] for s in a["slot_tasks"]]
            return [s for s in slots if s["task_id"] == task["id"]]

        deadline = time.time() + 60
        while not held() and time.time() < deadline:
            time.sleep(0.2)
        slot = held()
        assert len(slot) == 1, api.get("/ui/cluster").json()
        assert slot[0]["task"] == f"task-{task['id']}" and slot[0]["task_kind"] == "command"
        assert slot[0]["trial_id"] is None
    finally:
        api.post(f"/tasks/{task['id']}/kill")


def _validations(api, trial_id):
    """A trial's searcher-metric validations: ``{total_batches: validation_loss}``."""
    rows = api.get(f"/ui/trials/{trial_id}/workloads", params={"limit": 1000}).json()
    return {w["total_batches"]: w["metrics"]["validation_loss"]
            for w in rows["workloads"] if w["kind"] == "validation"}


def _asha_config(tiny_dir, **changes):
    # standard mode, max_rungs 2: bracket 0 has rungs at 20 and 40 batches, bracket 1
    # starts its trials at 40 (2 trials each).
    config = _config(tiny_dir, searcher={
        "name": "adaptive_asha", "metric": "validation_loss", "max_trials": 4,
        "max_length": {"batches": 40}, "divisor": 2, "max_rungs": 2, "mode": "standard"})
    config["hyperparameters"]["lr"] = {"type": "double", "minval": 0.01, "maxval": 0.3}
    del config["min_validation_period"]  # validations only where the searcher asks
    config.update(changes)
    return config


def _rung(r, bracket, rung):
    return next(x for x in r["rungs"] if x["bracket"] == bracket and x["rung"] == rung)


def test_rungs_are_the_searchers_brackets_and_rungs(api, tiny_dir_module):
    exp_id = create_experiment(api, _asha_config(tiny_dir_module), tiny_dir_module)
    wait_for_state(api, exp_id, ["COMPLETED"], timeout=180)
    r = api.get(f"/ui/experiments/{exp_id}/rungs").json()
    assert r["searcher"] == "adaptive_asha" and r["unit"] == "batch"
    assert r["brackets"] == [{"bracket": 0, "lengths": [20, 40]},
                             {"bracket": 1, "lengths": [40]}], r
    assert [(x["bracket"], x["rung"], x["length"]) for x in r["rungs"]] == [
        (0, 0, 20), (0, 1, 40), (1, 0, 40)]
    trials = {t["id"] for t in api.get(f"/ui/experiments/{exp_id}").json()["trials"]}
    first, second = _rung(r, 0, 0)["trials"], _rung(r, 1, 0)["trials"]
    firsts = {t["trial_id"] for t in first}
    seconds = {t["trial_id"] for t in second}
    # Each trial started in one bracket; bracket 1's trials first trained to 40 batches
    # and were never judged at 20.
    assert len(firsts) == len(seconds) == 2 and firsts | seconds == trials
    for t in first:
        assert min(_validations(api, t["trial_id"])) == 20
    for t in second:
        assert min(_validations(api, t["trial_id"])) == 40
    # Each metric is the one validated at the rung's length; best first; the promoted
    # trials of the 20-batch rung are exactly those at bracket 0's 40-batch rung.
    for x in r["rungs"]:
        for t in x["trials"]:
            assert t["metric"] == _validations(api, t["trial_id"])[x["length"]]
        metrics = [t["metric"] for t in x["trials"]]
        assert metrics == sorted(metrics)
    promoted = {t["trial_id"] for t in first if t["promoted"]}
    assert promoted == {t["trial_id"] for t in _rung(r, 0, 1)["trials"]} and promoted
    assert not any(t["promoted"] for t in second + _rung(r, 0, 1)["trials"])


def test_rungs_ignore_periodic_validations(api, tiny_dir_module):
    config = _asha_config(tiny_dir_module, min_validation_period={"batches": 10})
    exp_id = create_experiment(api, config, tiny_dir_module)
    wait_for_state(api, exp_id, ["COMPLETED"], timeout=180)
    r = api.get(f"/ui/experiments/{exp_id}/rungs").json()
    assert [x["length"] for x in r["rungs"]] == [20, 40, 40]
    assert len(_rung(r, 0, 0)["trials"]) == len(_rung(r, 1, 0)["trials"]) == 2
    for x in r["rungs"]:
        for t in x["trials"]:
            got = _validations(api, t["trial_id"])
            assert 10 in got  # periodic validations ran, and none of them is a rung
            assert t["metric"] == got[x["length"]]


def test_rungs_of_a_live_search_and_of_searches_without_rungs(api, tiny_dir_module):
    # A paused experiment's run is live: its core answers, before any result.
    exp_id = create_experiment(api, _asha_config(tiny_dir_module), tiny_dir_module,
                               activate=False)
    r = api.get(f"/ui/experiments/{exp_id}/rungs").json()
    assert [b["lengths"] for b in r["brackets"]] == [[20, 40], [40]]
    assert all(x["trials"] == [] for x in r["rungs"]) and len(r["rungs"]) == 3
    # A searcher without rungs, live and (no snapshot yet or ended) stored: empty lists.
    exp_id = create_experiment(api, _config(tiny_dir_module), tiny_dir_module,
                               activate=False)
    r = api.get(f"/ui/experiments/{exp_id}/rungs")
    assert r.status_code == 200
    assert (r.json()["brackets"], r.json()["rungs"]) == ([], [])
    assert api.post(f"/experiments/{exp_id}/kill").status_code == 200
    wait_for_state(api, exp_id, ["CANCELED"], timeout=60)
    assert api.get(f"/ui/experiments/{exp_id}/rungs").json()["rungs"] == []
    assert api.get("/ui/experiments/999999/rungs").status_code == 404


def test_hparam_importance_of_a_search(api, tiny_dir_module):
    config = _config(tiny_dir_module, searcher={
        "name": "random", "metric": "validation_loss", "max_trials": 4,
        "max_length": {"batches": 20}})
    config["hyperparameters"]["lr"] = {"type": "log", "minval": -3, "maxval": -0.5}
    exp_id = create_experiment(api, config, tiny_dir_module)
    wait_for_state(api, exp_id, ["COMPLETED"], timeout=120)
    r = api.get(f"/ui/experiments/{exp_id}/hparam-importance").json()
    assert r["metric"] == "validation_loss" and r["trials"] == 4
    assert [x["name"] for x in r["importance"]] == ["lr"]  # the only one that varies
    assert 0.0 <= r["importance"][0]["importance"] <= 1.0
    assert api.get("/ui/experiments/999999/hparam-importance").status_code == 404


def test_the_app_is_served_with_deep_links_and_offline_docs(master):
    assert webui.is_built(), "build the web UI first: scripts/build-webui.sh"
    with httpx.Client(base_url=master.url, timeout=30) as c:
        index = c.get("/").text
        assert '<div id="root">' in index
        deep = c.get("/experiments/12/trials/40")
        assert deep.status_code == 200 and deep.text == index
        asset = next(p for p in webui.static_files() if p.startswith("assets/") and
                     p.endswith(".js"))
        r = c.get("/" + asset)
        assert r.status_code == 200 and "immutable" in r.headers["cache-control"]
        assert c.get("/assets/missing-0000.js").status_code == 404
        assert c.get("/api/v1/no-such-route").status_code == 404
        assert c.post("/experiments/1").status_code in (404, 405)
        assert "root:" not in c.get("/..%2f..%2f..%2f..%2fetc/passwd").text
        docs = c.get("/docs").text
        assert "cdn" not in docs.lower() and "/swagger/swagger-ui-bundle.js" in docs
        for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert c.get(f"/swagger/{name}").status_code == 200
        assert "/api/v1/ui/experiments" in c.get("/openapi.json").json()["paths"]


def test_a_scripts_step_unit_is_its_searchers_unit(api, tiny_dir_module):
    """The UI names a script's steps (table headers, chart axes) from ``step_unit``."""
    script_dir = tiny_dir_module.parent / "script_trial"
    config = yaml.safe_load((script_dir / "const.yaml").read_text())
    config["searcher"]["max_length"] = {"epochs": 3}
    exp_id = create_experiment(api, config, script_dir, activate=False)
    assert api.get(f"/ui/experiments/{exp_id}").json()["step_unit"] == "epoch"
    del config["searcher"]["max_length"]  # runs until it exits: its own steps
    exp_id = create_experiment(api, config, script_dir, activate=False)
    assert api.get(f"/ui/experiments/{exp_id}").json()["step_unit"] == "step"
