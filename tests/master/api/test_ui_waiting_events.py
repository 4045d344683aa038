"""Why things wait, pushed on the web UI's live channel (``GET /ui/events?waiting=true``),
against a real master with one slot: the reasons come on connecting, then only when one
appears, changes or clears; streams that do not ask get none."""

import contextlib
import json
import threading
import time

import httpx
import pytest
import yaml

from master_testing import create_experiment, wait_until

pytestmark = pytest.mark.timeout(300)


def _read(response, out):
    name = None
    try:
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                out.append((name, json.loads(line[5:])))
    except httpx.HTTPError:  # the test closed the stream
        pass


def _waits(events):
    return [data for name, data in events if name == "waiting"]


def test_waiting_reasons_are_pushed_when_they_change(master_factory):
    master = master_factory(slots=1)
    api = master.client()
    followed, other = [], []
    with httpx.Client(base_url=master.url, timeout=60) as c, \
            httpx.Client(base_url=master.url, timeout=60) as c2:
        with c.stream("GET", "/api/v1/ui/events", params={"tasks": True, "waiting": True}) as r, \
                c2.stream("GET", "/api/v1/ui/events", params={"tasks": True}) as r2:
            assert r.status_code == 200 and r2.status_code == 200
            threading.Thread(target=_read, args=(r, followed), daemon=True).start()
            threading.Thread(target=_read, args=(r2, other), daemon=True).start()
            # On connecting: nothing waits.
            wait_until(lambda: _waits(followed), 30, "the first waiting event")
            assert _waits(followed) == [{"tasks": {}, "trials": {}, "experiments": {}}]

            holder = api.post("/tasks", json={"kind": "command", "config": {
                "entrypoint": "sleep 600"}}).json()["id"]
            wait_until(lambda: api.get(f"/tasks/{holder}").json()["state"] == "RUNNING", 60,
                       "the first command to run")
            queued = api.post("/tasks", json={"kind": "command", "config": {
                "entrypoint": "echo done"}}).json()["id"]
            reason = wait_until(lambda: [w["tasks"][queued] for w in _waits(followed)
                                         if queued in w["tasks"]], 60, "its reason")[-1]
            assert reason["reason"] == "waiting for 1 slot in use", reason
            assert f"task {holder}" in reason["detail"] and not reason["impossible"]
            # The same reason is not sent again while the master decides each second.
            count = len(_waits(followed))
            time.sleep(3)
            assert len(_waits(followed)) == count, _waits(followed)

            api.post(f"/tasks/{holder}/kill")
            wait_until(lambda: _waits(followed)[-1]["tasks"] == {}, 60, "the reason to clear")
            # /waiting stays for the CLI and scripts, and says the same.
            assert api.get("/waiting").json()["tasks"] == {}
    assert not _waits(other), other


def test_waiting_events_are_narrowed_to_what_the_stream_follows(master_factory, tiny_dir):
    master = master_factory(slots=1)
    api = master.client()
    holder = api.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 600"}}).json()["id"]
    wait_until(lambda: api.get(f"/tasks/{holder}").json()["state"] == "RUNNING", 60,
               "the command to run")
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    exp_id = create_experiment(api, config, tiny_dir)
    trial_id = wait_until(lambda: api.get(f"/experiments/{exp_id}/trials").json()["trials"],
                          60, "the trial")[0]["id"]
    other = create_experiment(api, config, tiny_dir)
    wait_until(lambda: {str(exp_id), str(other)} <= set(api.get("/waiting").json()[
        "experiments"]), 60, "both experiments to wait")
    streams = {"experiment": {"experiment_id": exp_id, "experiments": True},
               "trial": {"trial_id": trial_id}, "list": {"experiments": True},
               "tasks": {"tasks": True}}
    events = {name: [] for name in streams}
    with httpx.Client(base_url=master.url, timeout=60) as c:
        with contextlib.ExitStack() as stack:
            for name, params in streams.items():
                r = stack.enter_context(c.stream("GET", "/api/v1/ui/events",
                                                 params=dict(params, waiting=True)))
                threading.Thread(target=_read, args=(r, events[name]), daemon=True).start()
            wait_until(lambda: all(_waits(e) for e in events.values()), 30, "every stream")
            first = {name: _waits(e)[0] for name, e in events.items()}
            api.post(f"/tasks/{holder}/kill")
            wait_until(lambda: _waits(events["experiment"])[-1]["experiments"] == {}, 120,
                       "the experiment's reason to clear")
    exp, trial = str(exp_id), str(trial_id)
    assert set(first["experiment"]["experiments"]) == {exp}
    assert set(first["experiment"]["trials"]) == {trial} and first["experiment"]["tasks"] == {}
    assert set(first["trial"]["trials"]) == {trial}
    assert first["trial"]["experiments"] == {} and first["trial"]["tasks"] == {}
    assert set(first["list"]["experiments"]) == {exp, str(other)}
    assert first["list"]["trials"] == {}
    assert first["tasks"] == {"tasks": {}, "trials": {}, "experiments": {}}  # the holder runs
    for e in (exp_id, other):
        api.post(f"/experiments/{e}/kill")
