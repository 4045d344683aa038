"""The web UI in a real browser (Debian's Chromium, headless, through Playwright) against a
real master running real experiments.

One master (``allow_anonymous: false``) and one browser serve every test of the module, in
order: sign in, the list, an experiment (one series per trial), live metrics, the logs tail
of a running trial, pause, the cluster and master-logs pages, a user who owns nothing, and
the speed measurements (written to ``webui-speed.json`` under the test's output directory
and printed); then, on two more experiments started last (the cluster page test counts the
busy slots), a failed trial's log naming files in the model directory, and the trials table
of eight long hyperparameters (two the same in every trial, said above it) fitting an
800-pixel window. Screenshots of each page go to
the output directory too.
"""

import datetime
import json
import os
import re
import shutil
import tarfile
import time

import httpx
import pytest
import sqlalchemy as sa
import yaml

from determined.master import webui
from determined.master.db import Store
from determined.master.db import _models as m
from master_testing import (ConfiguredMasterProcess, create_experiment, set_password,
                            wait_for_state, wait_until)

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
INJECTION = "<script>window.__pwned=1</script>"
TICK_TRIAL = '''import time

from model_def import TinyTrial


class TickTrial(TinyTrial):
    """Sleeps a little per batch and prints a line every 5 batches (the logs tail test)."""

    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(0.05)
        if batch_idx % 5 == 0:
            print(f"tick {batch_idx}", flush=True)
        return super().train_batch(batch, epoch_idx, batch_idx)
'''
RAISE_TRIAL = '''import os

from model_def import TinyTrial


class RaiseTrial(TinyTrial):
    """Fails at once, in a file of the model directory, naming another one."""

    def __init__(self, context):
        raise ValueError("no rows in " + os.path.join(os.path.dirname(__file__), "train.csv"))
'''
# Eight hyperparameters, long names and values (the model reads three of them).
WIDE_HPARAMS = {
    "global_batch_size": 16, "lr": {"type": "log", "minval": -3, "maxval": -1, "base": 10},
    "dropout": {"type": "double", "minval": 0.1, "maxval": 0.3},
    "learning_rate_warmup_schedule": {"type": "categorical", "vals": [
        "linear-warmup-then-cosine-decay", "constant-after-linear-warmup"]},
    "optimizer_momentum_coefficient": {"type": "double", "minval": 0.85, "maxval": 0.99},
    "weight_decay_regularization": {"type": "log", "minval": -6, "maxval": -2, "base": 10},
    "data_augmentation_policy": "random-resized-crop-and-horizontal-flip",
    "gradient_clipping_max_norm": {"type": "double", "minval": 0.5, "maxval": 5.0},
}
FILLER_EXPERIMENTS = 1000


def _fill(data_dir: str, n: int) -> None:
    """``n`` finished experiments written straight into the master's database (one insert)."""
    store = Store("sqlite:///" + os.path.join(data_dir, "master.db"))
    store.upgrade()
    now = datetime.datetime.now(datetime.timezone.utc)
    with store._write() as s:
        owner = s.scalar(sa.select(m.User.id).where(m.User.username == "admin"))
        config = {"searcher": {"name": "single", "metric": "validation_loss"}}
        s.execute(sa.insert(m.Experiment.__table__), [
            {"state": "COMPLETED", "config": config, "model_def": b"", "owner_id": owner,
             "description": f"filler {i}", "labels": ["filler"], "archived": False,
             "weight": 1.0, "progress": 1.0, "start_time": now, "end_time": now}
            for i in range(n)])
    store.close()


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("webui")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, out_dir):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    data_dir = str(tmp_path_factory.mktemp("webui_master"))
    _fill(data_dir, FILLER_EXPERIMENTS)
    master = ConfiguredMasterProcess(data_dir, {
        "resource_manager": {"slots": 2}, "security": {"allow_anonymous": False}})
    try:
        yield from _run_cluster(master, data_dir)
    finally:
        master.stop()


def _run_cluster(master, data_dir):
    """Start the master and its experiments; yield what the tests use."""
    master.start(timeout=120)
    tiny = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tiny_pytorch")
    model_dir = os.path.join(data_dir, "tick_model")
    shutil.copytree(tiny, model_dir, ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(model_dir, "tick_def.py"), "w") as f:
        f.write(TICK_TRIAL)
    client = httpx.Client(base_url=master.url + "/api/v1", timeout=60)
    token = client.post("/auth/login", json={"username": "determined"}).json()["token"]
    client.headers["Authorization"] = f"Bearer {token}"
    admin = httpx.Client(base_url=master.url + "/api/v1", timeout=60)
    admin.headers["Authorization"] = "Bearer " + admin.post(
        "/auth/login", json={"username": "admin",
                             "password": set_password(master)}).json()["token"]
    assert admin.post("/users", json={"username": "viewer", "password": "pw"}).status_code == 201
    base = yaml.safe_load(open(os.path.join(tiny, "const.yaml")))
    search = dict(base, description="tiny search", labels=[INJECTION, "ok"],
                  searcher={"name": "random", "metric": "validation_loss", "max_trials": 3,
                            "max_length": {"batches": 40}})
    search["hyperparameters"] = dict(base["hyperparameters"],
                                     lr={"type": "log", "minval": -3, "maxval": -1, "base": 10})
    search_id = create_experiment(client, search, tiny)
    running = dict(base, description="tick run", entrypoint="tick_def:TickTrial",
                   searcher={"name": "single", "metric": "validation_loss",
                             "max_length": {"batches": 100000}},
                   min_validation_period={"batches": 50})
    running_id = create_experiment(client, running, model_dir)
    wait_for_state(client, search_id, ["COMPLETED"], timeout=300)  # a loaded CI machine
    yield {"master": master, "client": client, "search": search_id, "running": running_id,
           "data_dir": data_dir}
    client.post(f"/experiments/{running_id}/kill")


@pytest.fixture(scope="module")
def browser(cluster, out_dir):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(out_dir / "profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_default_timeout(20000)
        yield page, errors
        context.close()


@pytest.fixture(scope="module")
def speed(out_dir):
    results = {}
    yield results
    (out_dir / "webui-speed.json").write_text(json.dumps(results, indent=2))
    print("web UI speed:", json.dumps(results))


def shot(page, out_dir, name):
    page.screenshot(path=str(out_dir / f"{name}.png"), full_page=True)


def open_page(page, url):
    """Go to ``url``, signing in first where the browser has no session yet (each test
    runs alone too; only the first one tests the sign-in page)."""
    page.goto(url)
    page.locator("header.topbar").wait_for()  # drawn once the session is known
    if "/login" in page.url:
        page.fill("input[name=username]", "determined")
        page.click("button[type=submit]")
        page.wait_for_url(lambda now: "/login" not in now)


def test_sign_in_and_the_list_shows_experiments(cluster, browser, out_dir, speed):
    page, errors = browser
    url = cluster["master"].url
    page.goto(url + f"/experiments/{cluster['search']}")
    page.wait_for_url("**/login?next=*")
    shot(page, out_dir, "login")
    page.fill("input[name=username]", "determined")
    page.click("button[type=submit]")
    page.wait_for_url(f"**/experiments/{cluster['search']}")  # back where the deep link led
    # /login while signed in says who is, with a way back (it showed the bare form).
    page.goto(url + f"/login?next=/experiments/{cluster['search']}")
    who = page.get_by_test_id("signed-in-as")
    assert who.inner_text().startswith("Signed in as determined."), who.inner_text()
    who.get_by_role("link", name="Go back").click()
    page.wait_for_url(f"**/experiments/{cluster['search']}")
    page.goto(url + "/experiments")
    rows = page.locator("[data-testid=experiment-table] tbody tr")
    rows.first.wait_for()
    ids = [int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()[:2]]
    assert ids == [cluster["running"], cluster["search"]]
    assert page.get_by_test_id("pager").inner_text().count(str(FILLER_EXPERIMENTS + 2)) == 1
    shot(page, out_dir, "experiments")
    # The list with 1,000 experiments on one page: navigation to rendered rows.
    t0 = time.monotonic()
    page.goto(url + "/experiments?limit=1000&label=filler")
    page.wait_for_function(  # long tables render the rows near the viewport
        "document.querySelector('[data-testid=experiment-table] tbody')?.dataset.rows === '1000'"
        " && document.querySelectorAll('[data-testid=experiment-table] tbody tr').length > 20",
        timeout=60000)  # 1,000 rows fetched and rendered on a loaded machine
    speed["list_1000_wall_s"] = round(time.monotonic() - t0, 3)
    page.get_by_text("filler 999", exact=True).wait_for()
    page.mouse.wheel(0, 100_000)  # scrolled to the end, the last row is there
    page.get_by_text("filler 0", exact=True).wait_for()
    page.wait_for_function("document.querySelector('[data-testid=pager]')?.dataset.loadMs")
    speed["list_1000_fetch_to_render_ms"] = round(float(
        page.get_by_test_id("pager").get_attribute("data-load-ms")), 1)
    speed["list_1000_navigation_to_render_ms"] = round(float(
        page.get_by_test_id("pager").get_attribute("data-paint-at")), 1)
    # Speeds are recorded (README table), not asserted: this machine's load varies.
    assert speed["list_1000_fetch_to_render_ms"] > 0
    assert not errors, errors


def test_script_injection_label_stays_text(cluster, browser, out_dir):
    page, errors = browser
    open_page(page, cluster["master"].url + "/experiments")
    cell = page.locator("[data-testid=experiment-table] .label", has_text="window.__pwned")
    cell.first.wait_for()
    assert cell.first.inner_text() == INJECTION
    assert page.evaluate("window.__pwned") is None
    assert page.locator("[data-testid=experiment-table] script").count() == 0
    assert not errors, errors


def test_experiment_page_has_one_series_per_trial_and_live_metrics(cluster, browser, out_dir,
                                                                    speed):
    page, errors = browser
    client, exp_id = cluster["client"], cluster["search"]
    trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"]
    assert len(trials) == 3
    open_page(page, cluster["master"].url + f"/experiments/{exp_id}")
    chart = page.get_by_test_id("learning-curves")
    chart.locator("canvas").wait_for()
    assert chart.get_attribute("data-series") == "3"
    assert page.get_by_test_id("trial-picker").locator("label").count() == 3
    assert page.get_by_test_id("labels").inner_text().startswith(INJECTION)
    best = min((t for t in trials if t["best_validation"] is not None),
               key=lambda t: t["best_validation"])
    assert page.get_by_test_id("best-metric").inner_text().endswith(f"trial {best['id']}")
    assert page.title() == f"Experiment {exp_id} · COMPLETED · Determined"  # tabs tell apart
    shot(page, out_dir, "experiment")
    before = int(chart.get_attribute("data-points"))
    # A validation reported now appears on the open page (server-sent events).
    store = Store("sqlite:///" + os.path.join(cluster["data_dir"], "master.db"))
    try:
        t0 = time.monotonic()
        store.add_validation_metrics(trials[0]["id"], 1000, {"validation_loss": 0.25})
        page.wait_for_function(
            f"Number(document.querySelector('[data-testid=learning-curves]')?"
            f".dataset.points) > {before}", timeout=30000)  # live, without a reload
        speed["new_metric_on_page_s"] = round(time.monotonic() - t0, 3)  # target: 2 s
    finally:
        store.close()
    # The chart's controls redraw it with every trial still there.
    page.get_by_label("x axis").select_option("time")
    page.get_by_label("log scale").check()
    page.get_by_label("smoothing").press("End")
    page.get_by_label("metric", exact=True).select_option("training:loss")
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           "?.dataset.points > 6")  # training: 4 workloads per trial
    assert chart.get_attribute("data-series") == "3"
    page.get_by_label("x axis").select_option("records")
    page.get_by_test_id("trial-picker").locator("input").first.uncheck()
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           "?.dataset.series === '2'")
    for tab, testid in (("trials", "trials-table"), ("hyperparameters", "parallel-coordinates"),
                        ("checkpoints", "checkpoints-table"), ("config", "config-yaml")):
        page.get_by_role("button", name=tab, exact=True).click()
        page.get_by_test_id(testid).wait_for()
        shot(page, out_dir, f"experiment-{tab}")
    assert "searcher:" in page.get_by_test_id("config-yaml").inner_text()
    page.get_by_role("button", name="hyperparameters", exact=True).click()
    # One point per trial in the slice plots (drawn once the trials have loaded).
    page.get_by_test_id("slice-plots").locator("circle").nth(2).wait_for()
    assert page.get_by_test_id("slice-plots").locator("circle").count() == 3
    # Three trials, three values of lr: no estimate of its importance (it read 0%).
    assert page.get_by_test_id("importance-needs").inner_text() == (
        "no estimate yet: needs 4 trials that reported validation_loss, 3 have")
    page.get_by_role("button", name="checkpoints", exact=True).click()
    with page.expect_download() as download:
        page.get_by_test_id("checkpoints-table").get_by_text("download").first.click()
    with tarfile.open(download.value.path()) as tar:  # the checkpoint, through the master
        assert any(name.endswith("metadata.json") for name in tar.getnames())
    page.get_by_role("button", name="trials", exact=True).click()
    header = page.get_by_test_id("trials-table").locator("th", has_text="lr")
    header.first.wait_for()  # the tab switch renders after the click returns
    assert header.count() == 1
    # The constant hyperparameters are said once, above the table, not a column each.
    assert page.get_by_test_id("constant-hparams").inner_text() == (
        "same in every trial: dropout=0.2, global_batch_size=16")  # the trials' order
    assert page.get_by_test_id("trials-table").locator("th", has_text="dropout").count() == 0
    # Fork: a new experiment from this one's config, edited in the page.
    page.get_by_role("button", name="fork", exact=True).click()
    area = page.get_by_label("fork config")
    # It starts from the config as submitted, not the expanded one's defaults.
    assert "description: tiny search" in area.input_value()
    assert "records_per_epoch" not in area.input_value(), area.input_value()
    # The config box stays inside the page's column (100% wide plus its padding, it
    # stuck out past the tables' right edge).
    right = page.locator("nav.tabs").bounding_box()
    edge = area.bounding_box()
    assert edge["x"] + edge["width"] <= right["x"] + right["width"] + 0.5, (edge, right)
    area.fill(area.input_value().replace("description: tiny search",
                                         "description: forked search"))
    page.get_by_role("button", name="create experiment").click()
    page.wait_for_function(f"!location.pathname.endsWith('/experiments/{exp_id}') && "
                           "/experiments\\/\\d+$/.test(location.pathname)")
    page.get_by_test_id("description").wait_for()
    page.wait_for_function("document.querySelector('[data-testid=description]')?.textContent"
                           " === 'forked search'")
    forked = int(page.url.rsplit("/", 1)[1])
    client.post(f"/experiments/{forked}/kill")
    assert not errors, errors


def test_logs_page_tails_a_running_trial(cluster, browser, out_dir):
    page, errors = browser
    client, exp_id = cluster["client"], cluster["running"]
    trial_id = wait_until(lambda: (client.get(f"/experiments/{exp_id}/trials").json()["trials"]
                                   or [None])[0], 60, "the running trial")["id"]
    wait_until(lambda: client.get(f"/trials/{trial_id}/logs").json()["logs"], 60, "a log line")
    open_page(page, cluster["master"].url + f"/experiments/{exp_id}/trials/{trial_id}")
    logs = page.get_by_test_id("trial-logs")
    logs.locator(".log-line", has_text="tick").first.wait_for(timeout=60000)
    ticks = ("[...document.querySelectorAll('[data-testid=trial-logs] .log-line')]"
             ".filter((e) => e.textContent.includes('tick')).length")
    first = logs.locator(".log-line", has_text="tick").count()
    page.wait_for_function(f"{ticks} > {first}", timeout=60000)  # without a reload
    _zoom_and_hover_survive_live_metrics(page, client, trial_id)
    page.get_by_label("trial metric").select_option("training:loss")
    page.get_by_label("per batch").check()
    page.wait_for_function("Number(document.querySelector('[data-testid=trial-chart]')"
                           "?.dataset.points) >= 10")  # one point per batch
    page.get_by_label("search logs").fill("tick 1")
    page.wait_for_function(  # the filter applies after a short pause in typing
        "(() => { const l = [...document.querySelectorAll('[data-testid=trial-logs] .log-line')];"
        " return l.length > 0 && l.every((e) => e.textContent.includes('tick 1')); })()",
        timeout=60000)
    shown = logs.locator(".log-line").all_inner_texts()
    # Long lines wrap between words where they can (break-all split "batches" in two).
    assert logs.locator(".log-line").first.evaluate(
        "(e) => [getComputedStyle(e).wordBreak, getComputedStyle(e).overflowWrap]") == [
            "normal", "anywhere"]
    assert shown and all("tick 1" in line for line in shown)
    shot(page, out_dir, "trial")
    assert not errors, errors


def _zoom_and_hover_survive_live_metrics(page, client, trial_id):
    """The trial chart of a running trial: a drag zooms in (the x range used to ignore it)
    and new validations keep the chart, its zoom and its hover legend (each one built the
    chart anew); the legend names the metric once ("validation validation_loss" before)."""
    chart = page.get_by_test_id("trial-chart")
    chart.locator("canvas").wait_for(timeout=60000)  # the first validation
    page.evaluate("document.querySelector('[data-testid=trial-chart] .uplot').dataset.kept = '1'")
    full = chart.get_attribute("data-x-range")
    box = chart.locator(".u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.1, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, y, steps=5)
    page.mouse.up()
    zoomed = chart.get_attribute("data-x-range")
    lo, hi = map(float, zoomed.split(","))
    full_lo, full_hi = map(float, full.split(","))
    assert full_lo < lo < hi < full_hi, (full, zoomed)
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    points = int(chart.get_attribute("data-points"))
    page.wait_for_function("Number(document.querySelector('[data-testid=trial-chart]')"
                           f"?.dataset.points) > {points}", timeout=60000)  # a new validation
    assert page.evaluate(
        "document.querySelector('[data-testid=trial-chart] .uplot')?.dataset.kept") == "1"
    assert chart.get_attribute("data-x-range") == zoomed
    legend = chart.locator(".u-legend").inner_text()
    assert "validation_loss" in legend and "validation validation_loss" not in legend, legend
    # The hovered value to 4 significant digits, as the tables (uPlot's own kept 3 decimals).
    rows = chart.locator(".u-legend .u-series").evaluate_all(
        "rs => rs.map((r) => [r.querySelector('.u-label').textContent,"
        " r.querySelector('.u-value').textContent])")
    assert [label for label, _ in rows] == ["batches", "validation_loss"], rows
    at, value = int(rows[0][1].replace(",", "")), float(rows[1][1])
    s = client.get(f"/ui/trials/{trial_id}/metrics",
                   params={"kind": "validation", "metric": "validation_loss"}).json()
    assert value == float(f"{s['values'][s['batches'].index(at)]:.4g}"), (legend, s)
    page.mouse.dblclick(box["x"] + box["width"] * 0.3, y)  # back to the whole run
    page.wait_for_function("(() => { const [lo, hi] = document.querySelector("
                           "'[data-testid=trial-chart]').dataset.xRange.split(',').map(Number);"
                           f" return lo <= {full_lo} && hi >= {full_hi}; }})()")


def test_pause_from_the_experiment_page(cluster, browser, out_dir):
    page, errors = browser
    exp_id = cluster["running"]
    open_page(page, cluster["master"].url + f"/experiments/{exp_id}")
    badge = page.locator("h1 [data-testid=state]")
    badge.wait_for()
    assert badge.inner_text() == "ACTIVE"
    page.get_by_role("button", name="pause", exact=True).click()
    page.wait_for_function(
        "document.querySelector('h1 [data-testid=state]')?.textContent === 'PAUSED'")
    assert cluster["client"].get(f"/experiments/{exp_id}").json()["state"] == "PAUSED"
    # Its duration stops at the pause, and says so.
    page.get_by_test_id("started").get_by_text("until it paused").wait_for()
    page.get_by_role("button", name="activate", exact=True).click()
    page.wait_for_function(
        "document.querySelector('h1 [data-testid=state]')?.textContent === 'ACTIVE'")
    # The list follows state changes made elsewhere (here: the API) without a reload.
    open_page(page, cluster["master"].url + "/experiments")
    row = page.locator("[data-testid=experiment-table] tbody tr", has_text="tick run")
    row.locator("[data-testid=state]", has_text="ACTIVE").wait_for()
    assert cluster["client"].post(f"/experiments/{exp_id}/pause").status_code == 200
    row.locator("[data-testid=state]", has_text="PAUSED").wait_for()
    assert cluster["client"].post(f"/experiments/{exp_id}/activate").status_code == 200
    row.locator("[data-testid=state]", has_text="ACTIVE").wait_for()
    assert not errors, errors


def test_cluster_and_master_logs_pages(cluster, browser, out_dir):
    page, errors = browser
    open_page(page, cluster["master"].url + "/cluster")
    page.get_by_test_id("utilization").wait_for()
    assert page.get_by_test_id("slot").count() == 2
    page.wait_for_function(  # the trial reactivated by the pause test restarts first
        "document.querySelector('[data-testid=utilization]')?"
        ".textContent.startsWith('1 of 2')", timeout=180000)
    assert page.locator("[data-testid=slot] a", has_text="trial").count() == 1
    shot(page, out_dir, "cluster")
    open_page(page, cluster["master"].url + "/logs")
    page.get_by_test_id("master-logs").locator(".log-line").first.wait_for()
    shot(page, out_dir, "master-logs")
    assert not errors, errors


def test_a_user_who_owns_nothing_gets_a_read_only_ui(cluster, browser, out_dir):
    page, errors = browser
    url = cluster["master"].url
    open_page(page, url + "/experiments")
    page.get_by_role("button", name="sign out").click()
    page.wait_for_url("**/login*")
    page.fill("input[name=username]", "viewer")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url("**/experiments")
    page.get_by_label(f"select {cluster['search']}").check()
    assert page.get_by_test_id("batch-kill").is_disabled()
    open_page(page, url + f"/experiments/{cluster['running']}")
    page.get_by_text("read-only: owned by determined").wait_for()
    assert page.get_by_role("button", name="pause", exact=True).is_disabled()
    assert page.get_by_label("new label").count() == 0
    # The API refuses it too, with the viewer's session.
    status = page.evaluate(f"""fetch('/api/v1/experiments/{cluster['running']}/pause',
        {{method: 'POST', headers: {{Authorization: 'Bearer ' + localStorage.getItem('det.token')}}}})
        .then(r => r.status)""")
    assert status == 403
    shot(page, out_dir, "read-only")
    assert not errors, errors


def test_learning_curve_chart_speed(cluster, browser, out_dir, speed):
    page, errors = browser
    open_page(page, cluster["master"].url + "/bench/chart?trials=100&points=10000")
    result = page.get_by_test_id("bench-result")
    page.wait_for_function(
        "document.querySelector('[data-testid=bench-result]')?.dataset.ms", timeout=60000)
    speed["chart_100x10000_ms"] = round(float(result.get_attribute("data-ms")), 1)
    assert page.get_by_test_id("learning-curves").get_attribute("data-series") == "100"
    assert speed["chart_100x10000_ms"] > 0
    shot(page, out_dir, "chart-bench")
    assert not errors, errors


# Each description link: its box width and the width of its longest word in its font.
DESCRIPTION_WIDTHS = """() => [...document.querySelectorAll('[data-testid=experiment-table] .desc')]
  .map((el) => {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = getComputedStyle(el).font;
    const words = el.textContent.split(/\\s+/).filter(Boolean);
    return [el.textContent, el.getBoundingClientRect().width,
            Math.max(...words.map((w) => ctx.measureText(w).width))];
  })"""


# Each label's text and how many lines it takes.
LABEL_LINES = """() => [...document.querySelectorAll('[data-testid=experiment-table] .label')]
  .map((el) => {
    const r = document.createRange();
    r.selectNodeContents(el);
    return [el.textContent, new Set([...r.getClientRects()].filter((b) => b.width > 0)
      .map((b) => Math.round(b.top))).size];
  })"""


def test_descriptions_wrap_between_words_on_a_narrow_window(cluster, browser, out_dir):
    """At 800 pixels the description column kept about 85 of them and broke words in two
    ("hyperparam|eters"); it wraps between words (a table too wide for the window scrolls
    in its own box). Labels too: the column shrank to a few letters and broke "team:research"
    in two; a label breaks after its hyphens, and inside a word only when longer than 10em."""
    page, errors = browser
    client, exp_id = cluster["client"], cluster["search"]
    long = ("digits MLP, ASHA search over five hyperparameters, the learning rate, dropout,"
            " momentum, weight decay and the batch size, against validation loss")
    labels = [INJECTION, "team:research", "hyperparameter-sweep-with-a-long-label"]
    assert client.patch(f"/experiments/{exp_id}",
                        json={"description": long, "labels": labels}).status_code == 200
    try:
        page.set_viewport_size({"width": 800, "height": 900})
        open_page(page, cluster["master"].url + "/experiments")
        page.locator("[data-testid=experiment-table] .desc", has_text=long[:40]).wait_for()
        page.locator("[data-testid=experiment-table] .label", has_text="team:research").wait_for()
        shot(page, out_dir, "experiments-narrow")
        widths = page.evaluate(DESCRIPTION_WIDTHS)
        assert widths and all(box + 0.5 >= word for _, box, word in widths), widths
        lines = dict(page.evaluate(LABEL_LINES))
        assert lines["team:research"] == 1 and lines["filler"] == 1, lines
        assert lines["hyperparameter-sweep-with-a-long-label"] <= 3, lines
        box = page.get_by_test_id("experiment-table-scroll")
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth"), "the list scrolls sideways"
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
        client.patch(f"/experiments/{exp_id}",
                     json={"description": "tiny search", "labels": [INJECTION, "ok"]})
    assert not errors, errors


# Per row: whether its start time's date and time share a line, its best metric's name is
# on one line, and its description's title, height in lines and whether it is cut.
LIST_ROWS = """() => [...document.querySelectorAll('[data-testid=experiment-table] tbody tr')]
  .filter((r) => r.querySelector('.when')).map((r) => {
    const [date, time] = r.querySelectorAll('.when > span');
    const desc = r.querySelector('.desc');
    const name = r.querySelector('.metric-name');
    const range = (e) => { const r = document.createRange(); r.selectNodeContents(e); return r; };
    const tops = (e) => new Set([...range(e).getClientRects()].filter((b) => b.width > 0)
      .map((b) => Math.round(b.top))).size;
    return {
      when: date.getBoundingClientRect().top === time.getBoundingClientRect().top,
      metric: !name || tops(name) === 1,
      title: desc.title,
      lines: Math.round(desc.clientHeight / range(desc).getClientRects()[0].height),
      cut: desc.scrollHeight > desc.clientHeight + 1,
    };
  })"""


def test_a_long_description_leaves_the_start_time_on_one_line_at_1280(cluster, browser,
                                                                      out_dir):
    """At 1280 pixels a long description wrapped the Started column (date above time) and
    the best metric's name: they keep one line, and the description takes at most three
    lines, its whole text in its title."""
    page, errors = browser
    client, exp_id = cluster["client"], cluster["search"]
    long = " ".join(["a search over learning rates and dropout, described at length"] * 6)
    assert client.patch(f"/experiments/{exp_id}", json={"description": long}).status_code == 200
    try:
        page.set_viewport_size({"width": 1280, "height": 900})
        open_page(page, cluster["master"].url + "/experiments")
        page.locator("[data-testid=experiment-table] .desc", has_text=long[:80]).wait_for()
        shot(page, out_dir, "experiments-1280-long-description")
        rows = page.evaluate(LIST_ROWS)
        assert rows and all(r["when"] and r["metric"] for r in rows), rows
        described = [r for r in rows if r["title"] == long]
        assert len(described) == 1 and described[0]["lines"] == 3 and described[0]["cut"], rows
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
        client.patch(f"/experiments/{exp_id}", json={"description": "tiny search"})
    assert not errors, errors


@pytest.fixture(scope="module")
def late(cluster, tmp_path_factory):
    """Two experiments started after the tests above: a trial that fails in a file of its
    model directory, and a search over eight long hyperparameters."""
    client = cluster["client"]
    tiny = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tiny_pytorch")
    model_dir = tmp_path_factory.mktemp("raise_model") / "model"
    shutil.copytree(tiny, model_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (model_dir / "raise_def.py").write_text(RAISE_TRIAL)
    base = yaml.safe_load(open(os.path.join(tiny, "const.yaml")))
    failing = create_experiment(client, dict(base, description="raises", max_restarts=0,
                                             entrypoint="raise_def:RaiseTrial"), str(model_dir))
    wide = dict(base, description="eight hyperparameters", hyperparameters=WIDE_HPARAMS,
                searcher={"name": "random", "metric": "validation_loss", "max_trials": 3,
                          "max_length": {"batches": 20}})
    return {"failing": failing, "wide": create_experiment(client, wide, tiny)}


# A trial's working directory (harness/_trial_setup.py): it is removed when the trial ends.
WORKDIR = re.compile(r"exp\d+-trial\d+-pid\d")


def test_a_failed_trials_log_names_files_in_the_model_directory(cluster, late, browser,
                                                                out_dir):
    """The log view showed the traceback's frames in the trial's working directory, a copy
    of the model directory gone once the trial ended, where the failure box above it named
    the model directory's files: both name them alike now."""
    page, errors = browser
    client, exp_id = cluster["client"], late["failing"]
    wait_for_state(client, exp_id, ["ERROR"], timeout=300)
    trial_id = client.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["id"]
    written = [entry["line"] for entry in client.get(f"/trials/{trial_id}/logs").json()["logs"]]
    frames = [line for line in written if re.match(r'\s*File ".*raise_def\.py"', line)]
    assert frames and WORKDIR.search(frames[0]), written  # the log as the trial wrote it
    open_page(page, cluster["master"].url + f"/experiments/{exp_id}/trials/{trial_id}")
    logs = page.get_by_test_id("trial-logs")
    logs.locator(".log-line", has_text='File "raise_def.py"').first.wait_for()
    shown = logs.locator(".log-line").all_inner_texts()
    assert not [line for line in shown if WORKDIR.search(line)
                and (line.lstrip().startswith("File ") or "Error" in line)], shown
    assert any(line.rstrip() == "ValueError: no rows in train.csv" for line in shown), shown
    failure = page.get_by_test_id("trial-failure")
    assert "ValueError: no rows in train.csv" in failure.inner_text()
    shot(page, out_dir, "failed-trial-log")
    # The box reads the trial's stored error: the cause once, its traceback a click away.
    assert client.get(f"/trials/{trial_id}").json()["error"].startswith("Trial failed")
    assert failure.locator(".why").inner_text() == "ValueError: no rows in train.csv"
    assert failure.inner_text().count("no rows in train.csv") == 1, failure.inner_text()
    # What followed, from the trial's restarts and the config's max_restarts (not the log).
    failure.locator(".muted", has_text="no restarts left (0 of 0 restarts used)").wait_for()
    listed = client.get(f"/ui/experiments/{exp_id}").json()["trials"]
    assert "error" not in listed[0] and listed[0]["error_summary"].endswith(
        "ValueError: no rows in train.csv"), listed
    traceback = failure.get_by_test_id("trial-error")
    assert not traceback.locator("pre").is_visible()
    traceback.locator("summary", has_text="traceback").click()
    assert 'File "raise_def.py"' in traceback.locator("pre").inner_text()
    assert not WORKDIR.search(traceback.locator("pre").inner_text())
    try:
        for width in (1280, 800):
            page.set_viewport_size({"width": width, "height": 900})
            fits = "document.documentElement.scrollWidth <= window.innerWidth"
            assert page.evaluate(fits), f"the failed trial's page scrolls sideways at {width}"
            box = failure.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)
            shot(page, out_dir, f"failed-trial-error-{width}")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
    assert not errors, errors


VISIBLE_HEADERS = """(t) => [...t.querySelectorAll('thead th')]
  .filter((h) => getComputedStyle(h).display !== 'none').map((h) => h.textContent)"""


def test_many_hyperparameters_fit_an_800_pixel_window(cluster, late, browser, out_dir):
    """Eight hyperparameters, a column each, made the trials table scroll sideways at 800
    pixels: there they share one cell that wraps, and the metric, state and batches columns
    stay, sortable; on a wide window each keeps its column."""
    page, errors = browser
    client, exp_id = cluster["client"], late["wide"]
    wait_for_state(client, exp_id, ["COMPLETED"], timeout=300)
    try:
        page.set_viewport_size({"width": 800, "height": 900})
        open_page(page, cluster["master"].url + f"/experiments/{exp_id}?tab=trials")
        table = page.get_by_test_id("trials-table")
        table.locator("tbody tr").nth(2).wait_for()
        box = page.get_by_test_id("trials-table-scroll")
        widths = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert widths[0] <= widths[1], f"the trials table scrolls sideways: {widths}"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        # No trial selected yet: the TensorBoard button says why it is off, beside it.
        reason = page.get_by_test_id("tensorboard-trials-reason")
        assert reason.is_visible() and reason.inner_text() == "select trials in the table first"
        button = page.get_by_test_id("tensorboard-trials").get_by_role("button")
        assert button.is_disabled()
        assert button.get_attribute("aria-describedby") == reason.get_attribute("id")
        headers = table.evaluate(VISIBLE_HEADERS)
        assert headers[1:] == ["Trial ▲", "State", "Batches", "Best validation_loss", "Restarts",
                               "Hyperparameters"], headers
        cell = table.locator("tbody tr").first.get_by_test_id("hparam-pairs")
        text = cell.inner_text()
        # One line above the table: the constants, and a categorical all trials drew alike.
        trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"]
        constant = sorted(name for name in WIDE_HPARAMS
                          if len({json.dumps(t["hparams"][name]) for t in trials}) == 1)
        assert {"global_batch_size", "data_augmentation_policy"} <= set(constant), constant
        for name in WIDE_HPARAMS:
            assert (name in text) == (name not in constant), text
        same = page.get_by_test_id("constant-hparams")
        assert same.inner_text() == "same in every trial: " + ", ".join(
            f"{name}={trials[0]['hparams'][name]}" for name in constant), same.inner_text()
        # Readable: the cell is not squeezed to a sliver, and its pairs stay inside it.
        assert cell.bounding_box()["width"] >= 150, cell.bounding_box()
        assert cell.evaluate("(c) => [...c.children].every((p) => p.scrollWidth <= c.clientWidth)")
        shot(page, out_dir, "trials-many-hparams-800")
        table.locator("th", has_text="Batches").click()
        assert table.locator("th", has_text="Batches").get_attribute("aria-sort") == "ascending"
        table.locator("th", has_text="Best validation_loss").click()
        best = table.locator("tbody tr").evaluate_all(
            "rs => rs.map((r) => r.querySelectorAll('td')[4].textContent)")
        assert best == sorted(best, key=float), best
        page.set_viewport_size({"width": 1400, "height": 900})
        headers = table.evaluate(VISIBLE_HEADERS)
        assert "Hyperparameters" not in headers and "gradient_clipping_max_norm" in headers
        table.locator("th", has_text="gradient_clipping_max_norm").click()
        assert table.locator("th", has_text="gradient_clipping_max_norm").get_attribute(
            "aria-sort") == "ascending"
        shot(page, out_dir, "trials-many-hparams-1400")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
    assert not errors, errors


# Pairs of parallel-coordinates axis titles whose boxes overlap, and titles that leave the
# chart; then category names left of an axis that reach the axis before it.
PARCOORDS_CLASHES = """(svg) => {
  const width = svg.getBoundingClientRect().width;
  const titles = [...svg.querySelectorAll('text.axis-title')].map((t) => [t.textContent, t.getBBox()]);
  const out = [];
  titles.forEach(([a, p], i) => {
    if (p.x < 0 || p.x + p.width > width) out.push(a + ' leaves the chart');
    titles.slice(i + 1).forEach(([b, q]) => {
      if (p.x < q.x + q.width && q.x < p.x + p.width && p.y < q.y + q.height && q.y < p.y + p.height)
        out.push(a + ' / ' + b);
    });
  });
  const axes = [...svg.querySelectorAll('g[data-axis]')];
  axes.forEach((g, i) => {
    if (!i) return;
    const before = Number(axes[i - 1].querySelector('line').getAttribute('x1'));
    for (const t of g.querySelectorAll('text.tick'))
      if (t.getBBox().x < before) out.push(t.textContent + ' reaches ' + axes[i - 1].dataset.axis);
  });
  return out;
}"""


def test_long_hyperparameter_names_do_not_overlap_in_parallel_coordinates(cluster, late, browser,
                                                                           out_dir):
    """The parallel-coordinates titles of long hyperparameter names ran into each other (at
    1280 pixels too): they take two rows when they must, cut to their room (the whole name
    on hover); category names keep clear of the axis before theirs."""
    page, errors = browser
    client, exp_id = cluster["client"], late["wide"]
    wait_for_state(client, exp_id, ["COMPLETED"], timeout=300)
    try:
        for width in (1280, 800):
            page.set_viewport_size({"width": width, "height": 900})
            open_page(page, cluster["master"].url + f"/experiments/{exp_id}?tab=hyperparameters")
            chart = page.get_by_test_id("parallel-coordinates")
            chart.locator("path.line").first.wait_for()
            shot(page, out_dir, f"parallel-coordinates-{width}")
            clashes = chart.evaluate(PARCOORDS_CLASHES)
            assert not clashes, (width, clashes)
            for cut in chart.locator("text.axis-title[data-full]").all():
                assert cut.locator("title").text_content() == cut.get_attribute("data-full")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})
    assert not errors, errors
