"""Open pages across a master crash, in a real browser (Debian's Chromium, headless, through
Playwright) against a real master: an experiment page and a trial page are open while the
trial trains; the master is SIGKILLed; both pages say they are reconnecting; a new master
on the same port and database resumes the experiment; without a reload, signed in still,
both pages show what came after the restart (new metrics and checkpoints, COMPLETED at
the end).

Screenshots go to the test's output directory (``restart-*.png``).
"""

import os
import re

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from determined.master import webui
from master_testing import (ConfiguredMasterProcess, create_experiment, slow_model_dir,
                            wait_until)

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
MASTER_CONFIG = {"resource_manager": {"slots": 1}, "security": {"allow_anonymous": False}}
BATCHES = 300
HOLD_AFTER = 70
CONFIG = {
    "description": "trains across a master restart",
    "entrypoint": "slow_def:SlowTrial",
    "scheduling_unit": 10,
    # 0.1 s a batch; the first trial process waits after 70 batches for the test's go
    # (hold_file, set per run), so the kill lands mid-training however slow the pages are,
    # past the checkpoint at 60: the new master's trial goes back to it and stores the
    # workload at 70 again (under a new id, which the open page must still be sent).
    "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.1,
                        "hold_after": HOLD_AFTER},
    "searcher": {"name": "single", "metric": "validation_loss",
                 "max_length": {"batches": BATCHES}},
    "min_validation_period": {"batches": 20},
    "min_checkpoint_period": {"batches": 20},
    "max_restarts": 2,
}
STATE = "document.querySelector('h1 [data-testid=state]')?.textContent"
LOST = "document.querySelector('[data-testid=connection-lost]') !== null"


def _points(testid: str) -> str:
    return f"Number(document.querySelector('[data-testid={testid}]')?.dataset.points ?? -1)"


def shot(page, out_dir, name):
    page.screenshot(path=str(out_dir / f"restart-{name}.png"), full_page=True)


@pytest.fixture
def master(tmp_path):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    data_dir = str(tmp_path / "master")
    os.makedirs(data_dir)
    started = [ConfiguredMasterProcess(data_dir, MASTER_CONFIG).start(timeout=120)]

    def restart():
        started.append(ConfiguredMasterProcess(data_dir, MASTER_CONFIG,
                                               port=started[0].port).start(timeout=120))
        return started[-1]

    yield started[0], restart
    for m in started:
        m.stop()


@pytest.fixture
def context(tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        errors = []
        ctx.on("weberror", lambda e: errors.append(str(e.error)))
        yield ctx, errors
        ctx.close()


def _validations(client: httpx.Client, trial_id: int) -> int:
    metrics = client.get(f"/trials/{trial_id}").json()["metrics"]
    return sum(1 for m in metrics if m["kind"] == "validation")


def _workload_ids(client: httpx.Client, trial_id: int) -> dict:
    """(kind, total_batches) -> the stored row's id."""
    rows = client.get(f"/ui/trials/{trial_id}/workloads", params={"limit": 1000}).json()
    return {(w["kind"], w["total_batches"]): w["id"] for w in rows["workloads"]}


@pytest.mark.timeout(900)
def test_open_pages_follow_a_master_restart(master, context, tiny_dir, tmp_path):
    first, restart = master
    ctx, errors = context
    url = first.url
    client = httpx.Client(base_url=url + "/api/v1", timeout=60)
    client.headers["Authorization"] = "Bearer " + client.post(
        "/auth/login", json={"username": "determined"}).json()["token"]
    go = tmp_path / "go"
    config = dict(CONFIG, hyperparameters=dict(CONFIG["hyperparameters"], hold_file=str(go)))
    exp_id = create_experiment(client, config, slow_model_dir(tiny_dir, tmp_path))

    def trial():
        trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"]
        return trials[0] if trials else None

    trial_id = wait_until(trial, 180, "the trial")["id"]
    # Signed in through the page: the token the pages use is the browser's own.
    exp_page = ctx.new_page()
    exp_page.set_default_timeout(60000)
    exp_page.goto(url + f"/experiments/{exp_id}")
    exp_page.wait_for_url("**/login?next=*")
    exp_page.fill("input[name=username]", "determined")
    exp_page.click("button[type=submit]")
    exp_page.wait_for_url(f"**/experiments/{exp_id}")
    trial_page = ctx.new_page()
    trial_page.set_default_timeout(60000)
    trial_page.goto(url + f"/experiments/{exp_id}/trials/{trial_id}")

    # Both pages follow the training: validations arrive live.
    wait_until(lambda: (trial() or {}).get("total_batches", 0) >= HOLD_AFTER and
               _validations(client, trial_id) >= 2, 240, f"{HOLD_AFTER} batches trained")
    exp_page.wait_for_function(f"{_points('learning-curves')} >= 2")
    trial_page.wait_for_function(f"{_points('trial-chart')} >= 2")
    for page in (exp_page, trial_page):
        assert page.evaluate(STATE) == "ACTIVE"
        assert not page.evaluate(LOST)
        page.evaluate("window.sameDocument = true")  # gone if the page reloads

    assert trial()["state"] != "COMPLETED", "the trial ended before the kill"
    held = _workload_ids(client, trial_id)
    assert ("training", HOLD_AFTER) in held, held
    first.sigkill()
    go.touch()  # the trial may go on (it does once the new master restarts it)
    for page in (exp_page, trial_page):
        page.wait_for_function(LOST)
        assert page.get_by_test_id("connection-lost").inner_text() == "reconnecting…"
    shot(exp_page, tmp_path, "experiment-lost")
    shot(trial_page, tmp_path, "trial-lost")
    before = {"exp": exp_page.evaluate(_points("learning-curves")),
              "trial": trial_page.evaluate(_points("trial-chart"))}

    again = restart()
    client = httpx.Client(base_url=again.url + "/api/v1", timeout=60,
                          headers=dict(client.headers))
    for page in (exp_page, trial_page):
        page.wait_for_function(f"!({LOST})")
    # New points came after the restart, before the end.
    trial_page.wait_for_function(f"{_points('trial-chart')} > {before['trial']}", timeout=240000)
    exp_page.wait_for_function(f"{_points('learning-curves')} > {before['exp']}")
    for page in (exp_page, trial_page):
        page.wait_for_function(f"{STATE} === 'COMPLETED'", timeout=300000)
    validations = _validations(client, trial_id)
    assert validations == BATCHES // 20
    again = _workload_ids(client, trial_id)[("training", HOLD_AFTER)]
    assert again > held[("training", HOLD_AFTER)], (
        "the workload past the checkpoint was not stored again under a new id", again, held)
    exp_page.wait_for_function(f"{_points('learning-curves')} === {validations}")
    trial_page.wait_for_function(f"{_points('trial-chart')} === {validations}")
    workloads = len(client.get(f"/trials/{trial_id}").json()["metrics"])
    try:
        trial_page.get_by_text(f"{workloads} workloads").wait_for()
    except PlaywrightTimeout:
        shot(trial_page, tmp_path, "trial-workloads")
        shown = trial_page.get_by_text(re.compile(r"^\d+ workloads$")).all_inner_texts()
        ui = client.get(f"/ui/trials/{trial_id}/workloads").json()
        raise AssertionError(f"the trial page shows {shown}, not '{workloads} workloads'; "
                             f"/ui/trials/{trial_id}/workloads has total {ui['total']}; "
                             f"rows: {[(m['kind'], m['total_batches']) for m in client.get(f'/trials/{trial_id}').json()['metrics']]}") from None
    # The checkpoints list follows too: the last one, written after the restart, shows.
    latest = client.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["latest_checkpoint"]
    trial_page.get_by_test_id("checkpoints-table").get_by_text(latest).wait_for()
    shot(exp_page, tmp_path, "experiment-after")
    shot(trial_page, tmp_path, "trial-after")
    for page in (exp_page, trial_page):
        assert page.evaluate("window.sameDocument") is True, "the page reloaded"
        assert "/login" not in page.url
        assert page.get_by_test_id("who").inner_text().startswith("determined")
        assert page.get_by_role("alert").count() == 0, page.get_by_role("alert").all_inner_texts()
    assert not errors, errors
