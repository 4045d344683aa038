"""The web UI in a real browser (Debian's Chromium, headless, through Playwright) against a
real master with one slot: why an experiment waits comes over the live channel (no
``/api/v1/waiting`` request from the pages), and each page loads its data once on open,
even when its channel is slow to connect, while still following live changes.

Every request the browser makes is recorded."""

import os
import time
from collections import Counter
from urllib.parse import urlparse

import httpx
import pytest
import yaml

from determined.master import webui
from master_testing import ConfiguredMasterProcess, create_experiment, slow_model_dir, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
# A network this slow opens the live channel later than a page used to wait for it
# (1 s) before loading without it; the page then loaded again when the channel opened.
SLOW_NETWORK_MS = 1500


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    m = ConfiguredMasterProcess(str(tmp_path_factory.mktemp("webui_waiting")), {
        "resource_manager": {"slots": 1}, "security": {"allow_anonymous": False}})
    m.start(timeout=120)
    yield m
    m.stop()


@pytest.fixture(scope="module")
def client(master):
    c = httpx.Client(base_url=master.url + "/api/v1", timeout=60)
    c.headers["Authorization"] = "Bearer " + c.post(
        "/auth/login", json={"username": "determined"}).json()["token"]
    yield c
    c.close()


@pytest.fixture(scope="module")
def browser(master, tmp_path_factory):
    """A signed-in page and the paths of every request the browser made."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        requests = []
        context.on("request", lambda r: requests.append(urlparse(r.url).path))
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_default_timeout(30000)
        page.goto(master.url + "/experiments")
        page.wait_for_url("**/login?next=*")
        page.fill("input[name=username]", "determined")
        page.click("button[type=submit]")
        page.wait_for_url("**/experiments")
        yield page, requests
        context.close()
        assert not errors, errors


def _config(tiny_dir, **hparams):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(entrypoint="slow_def:SlowTrial", max_restarts=0)
    config["hyperparameters"] = dict(config["hyperparameters"], **hparams)
    return config


def _state(page):
    return page.locator("h1 [data-testid=state]")


def test_an_experiment_says_why_it_waits_live(master, client, browser, tiny_dir, tmp_path):
    page, requests = browser
    model = slow_model_dir(tiny_dir, tmp_path)
    go = tmp_path / "go"
    first = create_experiment(client, _config(tiny_dir, hold_file=str(go), hold_after=1),
                              model)
    wait_until(lambda: client.get(f"/experiments/{first}").json()["trials"], 120,
               "the first experiment's trial")
    wait_until(lambda: any(t["running"] for t in client.get(
        f"/experiments/{first}").json()["trials"]), 120, "the first trial to hold the slot")
    page.locator(f"a[href='/experiments/{first}']").first.wait_for()

    # The list, open before the second experiment exists, shows why it waits (the
    # master decides each second, the channel checks every 0.5 s: about 1-2 s).
    created = time.monotonic()
    second = create_experiment(client, _config(tiny_dir, sleep=0.05), model)
    row = page.locator("tbody tr", has=page.locator(f"a[href='/experiments/{second}']"))
    note = row.locator("[data-testid=waiting]")
    note.wait_for(timeout=15000)
    print(f"waiting reason shown {time.monotonic() - created:.2f} s after the create call")
    assert "slot" in note.inner_text(), note.inner_text()

    # Its trial's page says so too.
    trial = wait_until(lambda: client.get(f"/experiments/{second}").json()["trials"], 60,
                       "the second experiment's trial")[0]["id"]
    page.goto(master.url + f"/trials/{trial}")
    trial_note = page.get_by_test_id("trial-waiting")
    trial_note.wait_for(timeout=15000)
    assert "Waiting:" in trial_note.inner_text() and "slot" in trial_note.inner_text()

    # And its page, opened before the first ends, clears it when the slot frees.
    page.goto(master.url + "/experiments")
    page.locator(f"a[href='/experiments/{second}']").first.click()
    waiting = page.get_by_test_id("experiment-waiting")
    waiting.wait_for(timeout=15000)
    assert "Waiting:" in waiting.inner_text() and "slot" in waiting.inner_text()
    page.get_by_role("button", name="trials").click()
    page.locator("[data-testid=waiting]").nth(1).wait_for(timeout=15000)  # the trial's note
    go.write_text("go")
    waiting.wait_for(state="detached", timeout=120000)
    # ... and shows it finish without a reload.
    _state(page).filter(has_text="COMPLETED").wait_for(timeout=180000)
    assert page.locator("[data-testid=waiting]").count() == 0
    assert "/api/v1/waiting" not in requests, [r for r in requests if "wait" in r]
    # The list shows no reason once nothing waits.
    page.goto(master.url + "/experiments")
    page.locator(f"a[href='/experiments/{second}']").first.wait_for()
    assert page.locator("[data-testid=waiting]").count() == 0
    assert "/api/v1/waiting" not in requests


def _open(page, requests, url):
    """The API paths requested while ``url`` opens and settles (its channel included)."""
    page.goto("about:blank")
    del requests[:]
    page.goto(url)
    page.locator("main h1, h1").first.wait_for()
    page.wait_for_timeout(3 * SLOW_NETWORK_MS + 2000)  # a second load would have come
    return Counter(r for r in requests if r.startswith("/api/"))


def test_each_page_loads_its_data_once_on_a_slow_network(master, client, browser, tiny_dir,
                                                         tmp_path):
    page, requests = browser
    model = slow_model_dir(tiny_dir, tmp_path)
    go = tmp_path / "go"
    exp_id = create_experiment(client, _config(tiny_dir, hold_file=str(go), hold_after=20),
                               model)
    trial_id = wait_until(lambda: client.get(f"/experiments/{exp_id}").json()["trials"],
                         120, "the trial")[0]["id"]
    # A validation first: the curves' metric is then the searcher's from the start.
    wait_until(lambda: any(m["kind"] == "validation" for m in client.get(
        f"/trials/{trial_id}").json()["metrics"]), 120, "the first validation")
    task = client.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 600", "resources": {"slots": 0}}}).json()["id"]
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": SLOW_NETWORK_MS, "downloadThroughput": -1,
        "uploadThroughput": -1})
    try:
        pages = {
            "/experiments": ["/api/v1/ui/experiments"],
            f"/experiments/{exp_id}": [f"/api/v1/ui/experiments/{exp_id}",
                                       f"/api/v1/ui/experiments/{exp_id}/metrics"],
            f"/trials/{trial_id}": [f"/api/v1/ui/trials/{trial_id}/workloads",
                                    f"/api/v1/ui/experiments/{exp_id}"],
            "/tasks": ["/api/v1/tasks"],
        }
        for path, routes in pages.items():
            seen = _open(page, requests, master.url + path)
            assert seen["/api/v1/ui/events"] == 1, (path, seen)
            for route in routes:
                assert seen[route] == 1, (path, route, seen)
        # The experiment's page, open on the slow network, still follows it to the end.
        _open(page, requests, master.url + f"/experiments/{exp_id}")
        _state(page).filter(has_text="ACTIVE").wait_for()
        go.write_text("go")
        _state(page).filter(has_text="COMPLETED").wait_for(timeout=180000)
    finally:
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        client.post(f"/tasks/{task}/kill")
