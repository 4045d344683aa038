"""The web UI's model registry pages in a real browser (Debian's Chromium, headless, through
Playwright) against a real master: the empty registry says how to register a model; a
model registered from a real checkpoint of a tiny experiment shows in the Models page, its
page lists the version, and the version's checkpoint links to the trial that wrote it;
open pages show versions and models registered meanwhile through the REST API; at 800
pixels a model's versions and the experiment list fit their boxes.

Screenshots go to the test's output directory (``models-*.png``; also to
``$DET_WEBUI_SHOTS`` when set).
"""

import os
import shutil

import httpx
import pytest
import yaml

from determined.master import webui
from master_testing import ConfiguredMasterProcess, create_experiment, wait_for_state

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
TINY = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tiny_pytorch")
MODEL = "tiny digits"  # a space: the page's URL and API paths must encode it


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    """Screenshots; also copied to $DET_WEBUI_SHOTS when set (CI keeps them)."""
    out = tmp_path_factory.mktemp("webui_models")
    yield out
    keep = os.environ.get("DET_WEBUI_SHOTS")
    if keep:
        shutil.copytree(out, keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("profile"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    data_dir = str(tmp_path_factory.mktemp("webui_models_master"))
    master = ConfiguredMasterProcess(data_dir, {"resource_manager": {"slots": 1},
                                                "security": {"allow_anonymous": False}})
    master.start(timeout=120)
    try:
        client = httpx.Client(base_url=master.url + "/api/v1", timeout=60)
        client.headers["Authorization"] = "Bearer " + client.post(
            "/auth/login", json={"username": "determined"}).json()["token"]
        with open(os.path.join(TINY, "const.yaml")) as f:
            config = dict(yaml.safe_load(f), description="tiny for the registry")
        exp_id = create_experiment(client, config, TINY)
        wait_for_state(client, exp_id, ["COMPLETED"], timeout=180)
        yield {"master": master, "client": client, "experiment": exp_id}
    finally:
        master.stop()


@pytest.fixture(scope="module")
def page(cluster, out_dir):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(out_dir / "profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        pg = context.new_page()
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.set_default_timeout(30000)
        yield pg
        context.close()
        assert not errors, errors


def shot(page, out_dir, name):
    page.screenshot(path=str(out_dir / f"models-{name}.png"), full_page=True)


@pytest.mark.timeout(600)
def test_signed_out_visitors_sign_in_and_see_how_to_register(cluster, page, out_dir):
    page.goto(cluster["master"].url + "/models")
    page.wait_for_url("**/login?next=*")
    page.fill("input[name=username]", "determined")
    page.click("button[type=submit]")
    page.wait_for_url("**/models")
    empty = page.get_by_test_id("empty-registry")
    empty.wait_for()
    assert "det model create NAME" in empty.inner_text()
    assert "det model register-version NAME CHECKPOINT_UUID" in empty.inner_text()
    shot(page, out_dir, "empty")


@pytest.mark.timeout(600)
def test_a_registered_model_links_its_version_to_the_trial(cluster, page, out_dir):
    client, exp_id = cluster["client"], cluster["experiment"]
    checkpoints = client.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    last = max(checkpoints, key=lambda c: c["total_batches"])
    assert client.post(f"/models/{MODEL}", json={
        "description": "the tiny model, best checkpoint",
        "metadata": {"stage": "staging", "dataset": "synthetic"}}).status_code == 201
    assert client.post("/models/empty one", json={}).status_code == 201
    registered = client.post(f"/models/{MODEL}/versions", json={"checkpoint_uuid": last["uuid"]})
    assert registered.status_code == 201, registered.text
    loss = registered.json()["searcher_metric"]["value"]

    page.goto(cluster["master"].url + "/experiments")
    page.get_by_role("navigation").get_by_role("link", name="Models").click()
    table = page.get_by_test_id("model-table")
    row = table.locator("tbody tr", has_text=MODEL)
    row.wait_for()
    # Newest first: the model created last is on top.
    assert table.locator("tbody tr td:first-child").all_inner_texts() == ["empty one", MODEL]
    assert "staging" in row.inner_text() and row.locator("td").nth(2).inner_text() == "1"
    shot(page, out_dir, "list")
    page.get_by_label("search models").fill("tiny")
    page.get_by_label("search models").press("Enter")
    page.wait_for_function("document.querySelectorAll('[data-testid=model-table] tbody tr')"
                           ".length === 1")

    row.get_by_role("link", name=MODEL).click()
    page.wait_for_url("**/models/tiny%20digits")
    versions = page.get_by_test_id("version-table")
    versions.wait_for()
    assert page.get_by_test_id("model-description").inner_text() == (
        "the tiny model, best checkpoint")
    assert "synthetic" in page.get_by_test_id("model-metadata").inner_text()
    version = versions.locator("tbody tr")
    assert version.count() == 1
    text = version.inner_text()
    assert "validation_loss" in text and "accuracy" in versions.locator("thead").inner_text()
    assert 1e-3 <= loss < 1e6  # shown to 4 significant digits, as elsewhere in the UI
    assert f"{loss:.4g} validation_loss" in text, (loss, text)
    shot(page, out_dir, "model")

    version.get_by_role("link", name=last["uuid"]).click()
    page.wait_for_url(f"**/experiments/{exp_id}/trials/{last['trial_id']}")
    heading = page.get_by_role("heading", level=1)
    heading.wait_for()
    assert f"Trial {last['trial_id']}" in heading.inner_text()
    page.get_by_test_id("checkpoints-table").locator("tbody tr", has_text=last["uuid"]).wait_for()
    shot(page, out_dir, "trial")


@pytest.mark.timeout(600)
def test_a_model_without_versions_says_how_to_register_one(cluster, page, out_dir):
    page.goto(cluster["master"].url + "/models/empty%20one")
    hint = page.get_by_test_id("no-versions")
    hint.wait_for()
    assert "det model register-version 'empty one' CHECKPOINT_UUID" in hint.inner_text()
    shot(page, out_dir, "no-versions")


@pytest.mark.timeout(600)
def test_open_pages_show_versions_registered_elsewhere(cluster, page, out_dir):
    """Registered through the REST API (as the CLI and SDK do) while a page is open: the
    page shows it without a reload (the live channel)."""
    from playwright.sync_api import expect

    client, exp_id = cluster["client"], cluster["experiment"]
    checkpoints = client.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    first = min((c for c in checkpoints if c["state"] == "COMPLETED"),
                key=lambda c: c["total_batches"])
    assert client.post(f"/models/{MODEL}", json={}).status_code in (201, 409)

    page.goto(cluster["master"].url + "/models/tiny%20digits")
    page.get_by_test_id("model-metadata").wait_for()  # loaded
    registered = client.post(f"/models/{MODEL}/versions", json={"checkpoint_uuid": first["uuid"]})
    assert registered.status_code == 201, registered.text
    number = str(registered.json()["version"])
    newest = page.get_by_test_id("version-table").locator("tbody tr").first
    expect(newest.locator("td").first).to_have_text(number, timeout=30000)
    expect(newest.get_by_role("link", name=first["uuid"])).to_be_visible()
    shot(page, out_dir, "model-live")

    page.get_by_role("heading", level=1).get_by_role("link", name="Models").click()
    row = page.get_by_test_id("model-table").locator("tbody tr", has_text=MODEL)
    versions = row.locator("td").nth(2)
    expect(versions).to_have_text(number, timeout=30000)
    again = client.post(f"/models/{MODEL}/versions", json={"checkpoint_uuid": first["uuid"]})
    assert again.status_code == 201, again.text
    expect(versions).to_have_text(str(again.json()["version"]), timeout=30000)
    assert client.post("/models/made elsewhere", json={}).status_code == 201
    expect(page.get_by_test_id("model-table").locator("tbody tr", has_text="made elsewhere")
           ).to_be_visible(timeout=30000)
    shot(page, out_dir, "list-live")


@pytest.mark.timeout(600)
def test_a_model_and_the_experiment_list_fit_an_800_pixel_window(cluster, page, out_dir):
    """At 800 pixels a model's versions (time, UUID) and the experiment list (a long
    label, the Owner column) scrolled sideways in their boxes: they fit, and the list
    shows each experiment's owner under its description instead of in a column."""
    client, exp_id = cluster["client"], cluster["experiment"]
    checkpoints = client.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    assert client.post(f"/models/{MODEL}", json={}).status_code in (201, 409)
    assert client.post(f"/models/{MODEL}/versions", json={
        "checkpoint_uuid": max(checkpoints, key=lambda c: c["total_batches"])["uuid"]}
    ).status_code == 201
    assert client.patch(f"/experiments/{exp_id}", json={
        "labels": ["baseline", "long-label-for-the-narrow-window"]}).status_code == 200
    page.set_viewport_size({"width": 800, "height": 900})
    try:
        page.goto(cluster["master"].url + "/models/tiny%20digits")
        page.get_by_test_id("version-table").locator("tbody tr").first.wait_for()
        shot(page, out_dir, "model-800")
        _fits(page, "version-table-scroll", "a model's versions")
        page.goto(cluster["master"].url + "/experiments")
        row = page.locator("[data-testid=experiment-table] tbody tr", has_text="long-label")
        row.wait_for()
        shot(page, out_dir, "experiments-800")
        _fits(page, "experiment-table-scroll", "the experiment list")
        assert row.get_by_test_id("row-owner").inner_text() == "determined"
        assert not page.get_by_role("columnheader", name="Owner").is_visible()
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
    # A wide window has the Owner column back, and the owner once per row.
    assert page.get_by_role("columnheader", name="Owner").is_visible()
    assert not row.get_by_test_id("row-owner").is_visible()


def _fits(page, test_id, what):
    """The box ``test_id`` does not scroll sideways, nor does the page."""
    widths = page.get_by_test_id(test_id).evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], f"{what} scrolls sideways: {widths[0]} > {widths[1]} pixels"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), what
