"""The web UI's task list in a real browser (Debian's Chromium, headless, through
Playwright) against a real master (``allow_anonymous: false``, one slot): rows appear and
change state live, the cluster page links a busy slot to its task, a command's logs tail
live, a queued task says why it waits, the list fits an 800-pixel window, kill (after a
confirmation) frees the slot, a notebook launched from the page opens through the proxy,
and another user's tasks cannot be killed."""

import os

import httpx
import pytest

from determined.master import webui
from master_testing import ADMIN_PASSWORD, ConfiguredMasterProcess, set_password, wait_until

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
TICKER = "for i in $(seq 1 100000); do echo tick $i '<b>x</b>'; sleep 0.2; done"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    m = ConfiguredMasterProcess(str(tmp_path_factory.mktemp("webui_tasks")), {
        "resource_manager": {"slots": 1}, "security": {"allow_anonymous": False}})
    m.start(timeout=120)
    set_password(m)  # a blank admin password cannot log in without anonymous access
    yield m
    m.stop()


def login(m, user: str) -> httpx.Client:
    c = httpx.Client(base_url=m.url + "/api/v1", timeout=60)
    c.headers["Authorization"] = "Bearer " + c.post(
        "/auth/login", json={"username": user, "password": ADMIN_PASSWORD if user == "admin"
                             else ""}).json()["token"]
    return c


@pytest.fixture(scope="module")
def page(master, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        pg = context.new_page()
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.set_default_timeout(20000)
        pg.goto(master.url + "/tasks")
        pg.wait_for_url("**/login?next=*")
        pg.fill("input[name=username]", "determined")
        pg.click("button[type=submit]")
        pg.wait_for_url("**/tasks")
        yield pg
        context.close()
        assert not errors, errors


def _row(page, task_id):
    return page.locator("[data-testid=task-table] tbody tr", has_text=task_id)


def test_task_list_live_logs_and_kill(master, page, tmp_path):
    c = login(master, "determined")
    ticker = c.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": TICKER, "description": "ticker"}}).json()
    # A new task appears without a reload, then turns RUNNING.
    row = _row(page, ticker["id"])
    row.locator("[data-testid=state]", has_text="RUNNING").wait_for(timeout=30000)
    assert "command" in row.inner_text() and "embedded" in row.inner_text()
    # The cluster page links the slot it holds to it: to its row, its logs open.
    page.goto(master.url + "/cluster")
    page.locator("[data-testid=slot] a", has_text=f"command {ticker['id']}").click()
    page.wait_for_url(f"**/tasks?logs={ticker['id']}")
    assert "selected" in row.get_attribute("class")
    # Its logs tail live (lines are text).
    page.get_by_test_id(f"logs-{ticker['id']}").click()
    page.wait_for_url(f"**/tasks?logs={ticker['id']}")
    logs = page.get_by_test_id("task-logs")
    logs.locator(".log-line", has_text="tick").first.wait_for(timeout=30000)
    count = logs.locator(".log-line").count()
    page.wait_for_function("document.querySelectorAll('[data-testid=task-logs] .log-line')"
                           f".length > {count}", timeout=60000)
    assert logs.locator("b").count() == 0 and "<b>x</b>" in logs.inner_text()
    # A second command waits for the only slot; killing the first frees it.
    second = c.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "echo second"}}).json()
    _row(page, second["id"]).locator("[data-testid=state]", has_text="PENDING").wait_for()
    # ... and says why: the slot is held, by which task (on hover).
    note = _row(page, second["id"]).locator("[data-testid=waiting]",
                                            has_text="waiting for 1 slot in use")
    note.wait_for(timeout=30000)
    assert f"task {ticker['id']}" in note.get_attribute("title")
    page.screenshot(path=str(tmp_path / "tasks.png"), full_page=True)
    # At 800 pixels the table fits its box (it scrolled its kill buttons out of sight).
    page.set_viewport_size({"width": 800, "height": 900})
    try:
        box = page.get_by_test_id("task-table-scroll")
        widths = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        page.screenshot(path=str(tmp_path / "tasks-800.png"), full_page=True)
        assert widths[0] <= widths[1], f"the task list scrolls sideways: {widths}"
        assert page.get_by_test_id(f"kill-{ticker['id']}").is_visible()
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
    page.get_by_test_id(f"kill-{ticker['id']}").click()
    row.get_by_role("button", name="yes, kill it").click()  # kill asks first
    row.locator("[data-testid=state]", has_text="TERMINATED").wait_for(timeout=30000)
    assert "killed" in row.locator("[data-testid=end-reason]").inner_text()
    assert page.get_by_test_id(f"kill-{ticker['id']}").is_disabled()
    second_row = _row(page, second["id"])
    second_row.locator("[data-testid=state]", has_text="TERMINATED").wait_for(timeout=30000)
    assert "exit 0" in second_row.inner_text()
    assert c.get(f"/tasks/{ticker['id']}").json()["end_reason"] == "killed"


def test_another_users_task_cannot_be_killed_and_a_notebook_opens(master, page):
    pytest.importorskip("jupyterlab", reason="the optional extra 'notebook'")
    admin = login(master, "admin")
    assert admin.post("/users", json={"username": "other"}).status_code == 201
    other = login(master, "other")
    theirs = other.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 600", "resources": {"slots": 0}}}).json()
    row = _row(page, theirs["id"])
    row.locator("[data-testid=state]", has_text="RUNNING").wait_for(timeout=30000)
    assert page.get_by_test_id(f"kill-{theirs['id']}").is_disabled()
    other.post(f"/tasks/{theirs['id']}/kill")
    row.locator("[data-testid=state]", has_text="TERMINATED").wait_for(timeout=30000)

    c = login(master, "determined")
    page.get_by_role("button", name="launch notebook").click()  # POST /tasks from the UI
    launched = page.get_by_test_id("launch-notebook-task")
    launched.wait_for()
    nb = {"id": launched.locator("a").first.inner_text().split()[-1]}
    assert c.get(f"/tasks/{nb['id']}").json()["kind"] == "notebook"
    page.get_by_test_id("launch-notebook-open").wait_for(timeout=60000)  # it links it too
    link = page.get_by_test_id(f"open-{nb['id']}")
    link.wait_for(timeout=30000)
    href = link.get_attribute("href")
    assert href.startswith(f"/proxy/{nb['id']}/lab?det_token=")
    base = f"/proxy/{nb['id']}"
    wait_until(lambda: c.get(master.url + f"{base}/api/status").status_code == 200, 120,
               "JupyterLab")
    tab = page.context.new_page()
    tab.goto(master.url + href)  # the proxy keeps the login in a cookie, then serves the lab
    tab.wait_for_url(f"**{base}/lab*")
    tab.wait_for_function("document.title.includes('JupyterLab')", timeout=60000)
    tab.close()
    page.get_by_test_id(f"kill-{nb['id']}").click()
    _row(page, nb["id"]).get_by_role("button", name="yes, kill it").click()
    _row(page, nb["id"]).locator("[data-testid=state]", has_text="TERMINATED").wait_for(
        timeout=30000)


def test_a_waiting_trial_says_why_on_its_pages(master, page, tiny_dir):
    """An experiment whose trial waits for the slot a command holds: its page, its
    trials table and the trial's page say why the trial waits, and which task holds it."""
    import yaml

    from master_testing import create_experiment

    c = login(master, "determined")
    busy = c.post("/tasks", json={"kind": "command", "config": {"entrypoint": "sleep 600"}})
    busy_id = busy.json()["id"]
    wait_until(lambda: c.get(f"/tasks/{busy_id}").json()["state"] == "RUNNING", 60,
               "the command holding the slot")
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    exp_id = create_experiment(c, config, tiny_dir)
    page.goto(f"{master.url}/experiments/{exp_id}?tab=trials")
    banner = page.get_by_test_id("experiment-waiting")
    banner.wait_for(timeout=30000)
    assert f"held by task {busy_id}" in banner.inner_text()
    page.locator("table [data-testid=waiting]", has_text="waiting for 1 slot in use") \
        .wait_for(timeout=30000)
    trial_id = c.get(f"/experiments/{exp_id}").json()["trials"][0]["id"]
    page.goto(f"{master.url}/experiments/{exp_id}/trials/{trial_id}")
    note = page.get_by_test_id("trial-waiting")
    note.wait_for(timeout=30000)
    assert "The trial needs 1 slot" in note.inner_text()
    c.post(f"/tasks/{busy_id}/kill")
    note.wait_for(state="detached", timeout=60000)  # it runs: no reason any more
    c.post(f"/experiments/{exp_id}/kill")
    page.goto(master.url + "/tasks")
