"""The web UI on an adaptive ASHA search, in a real browser (Debian's Chromium, headless,
through Playwright) against a real master: markers make one-validation trials visible and
stopped trials look different; the trial page opens on the searcher's metric; kill and
cancel ask first; a failed experiment does not read 100%; a signed-out visitor gets a hint;
a TensorBoard starts from the experiment page and opens through the proxy; the
hyperparameter views (ticks, log axes, brushing, hover, importance, slice, contour,
intermediate values); tables scroll in their own box on a narrow window, and the trials
table, the experiment list, the checkpoint tables and the parallel-coordinates chart fit an
800-pixel one.

Screenshots go to the test's output directory (``asha-*.png``; also to
``$DET_WEBUI_SHOTS`` when set); ``asha-readme.png`` is the README's picture of the web UI
(``docs/webui.png``).
"""

import os
import re
import shutil
import time

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
N_TRIALS = 12
TINY = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tiny_pytorch")
# Saturated (coloured) pixels of a uPlot canvas: series, not grid or axis text.
COLOURED_PIXELS = """(sel) => {
  const c = document.querySelector(sel + ' canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] < 200) continue;
    if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
  }
  return n;
}"""
# Pairs of tick labels on an SVG chart's x axis (the lowest row of tick labels) whose
# boxes overlap.
X_TICK_OVERLAPS = """(svg) => {
  const ticks = [...svg.querySelectorAll('text.tick')];
  const bottom = Math.max(...ticks.map((t) => Number(t.getAttribute('y'))));
  const boxes = ticks.filter((t) => Number(t.getAttribute('y')) === bottom)
    .map((t) => [t.textContent, t.getBBox()]).sort((a, b) => a[1].x - b[1].x);
  const out = [];
  for (let i = 1; i < boxes.length; i++) {
    const [[a, left], [b, right]] = [boxes[i - 1], boxes[i]];
    if (left.x + left.width > right.x) out.push([a, b]);
  }
  return out;
}"""


def _asha_config():
    base = yaml.safe_load(open(os.path.join(TINY, "const.yaml")))
    base.pop("min_validation_period", None)  # validations only at rungs: most trials have one
    base.update(description="asha search", max_restarts=0, searcher={
        "name": "adaptive_asha", "metric": "validation_loss", "smaller_is_better": True,
        "max_trials": N_TRIALS, "max_length": {"batches": 256}, "divisor": 4,
        "max_rungs": 3})
    base["hyperparameters"] = {
        "global_batch_size": 16,
        "lr": {"type": "log", "minval": -3, "maxval": -0.5, "base": 10},
        "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5},
        "optimizer": {"type": "categorical", "vals": ["sgd", "adam"]},
    }
    return base


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    """Screenshots; also copied to $DET_WEBUI_SHOTS when set (CI keeps them)."""
    out = tmp_path_factory.mktemp("webui_asha")
    yield out
    keep = os.environ.get("DET_WEBUI_SHOTS")
    if keep:
        shutil.copytree(out, keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("profile"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    data_dir = str(tmp_path_factory.mktemp("webui_asha_master"))
    master = ConfiguredMasterProcess(data_dir, {"resource_manager": {"slots": 2}})
    master.start(timeout=120)
    try:
        client = httpx.Client(base_url=master.url + "/api/v1", timeout=60)
        client.headers["Authorization"] = "Bearer " + client.post(
            "/auth/login", json={"username": "determined"}).json()["token"]
        asha = create_experiment(client, _asha_config(), TINY)
        broken = dict(_asha_config(), description="broken", entrypoint="model_def:NoSuchTrial")
        broken["searcher"] = dict(broken["searcher"], max_trials=2)
        failed = create_experiment(client, broken, TINY)
        wait_for_state(client, asha, ["COMPLETED"], timeout=600)  # a loaded CI machine
        wait_for_state(client, failed, ["ERROR"], timeout=300)
        yield {"master": master, "client": client, "asha": asha, "failed": failed}
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
        pg.goto(cluster["master"].url + "/login")
        pg.fill("input[name=username]", "determined")
        pg.click("button[type=submit]")
        pg.wait_for_url("**/experiments")
        yield pg
        context.close()
        assert not errors, errors


def shot(page, out_dir, name, full_page=True):
    page.screenshot(path=str(out_dir / f"asha-{name}.png"), full_page=full_page)


def _one_validation_trial(client, exp_id):
    """A trial the searcher stopped at the first rung: one validation only. Not the best
    trial: that one is drawn black, which the coloured-pixel count cannot see (a trial
    stopped at the first rung can be the best when the promoted ones diverge)."""
    trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"]
    scored = [t for t in trials if t.get("best_validation") is not None]
    best = min(scored, key=lambda t: t["best_validation"])["id"] if scored else None
    for t in trials:
        if t["id"] == best:
            continue
        s = client.get(f"/ui/trials/{t['id']}/metrics",
                       params={"kind": "validation", "metric": "validation_loss"}).json()
        if len(s["batches"]) == 1:
            return t["id"]
    raise AssertionError("no trial stopped at the first rung")


def test_curves_show_one_validation_trials_and_stopped_ones(cluster, page, out_dir):
    client, exp_id = cluster["client"], cluster["asha"]
    trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"]
    assert len(trials) == N_TRIALS
    page.goto(cluster["master"].url + f"/experiments/{exp_id}")
    chart = page.get_by_test_id("learning-curves")
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           f"?.dataset.series === '{N_TRIALS}'")
    # Only a trial with one validation shown: its marker is on the canvas.
    lone = _one_validation_trial(client, exp_id)
    picker = page.get_by_test_id("trial-picker")
    picker.get_by_role("button", name="none").click()
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           "?.dataset.series === '0'")
    picker.locator("label").filter(has_text=re.compile(rf"^trial {lone}\b")).locator(
        "input").check()
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           "?.dataset.series === '1'")
    coloured = page.evaluate(COLOURED_PIXELS, "[data-testid=learning-curves]")
    shot(page, out_dir, "one-validation-trial")
    assert coloured > 10, f"trial {lone}'s only validation is not drawn ({coloured} pixels)"
    picker.get_by_role("button", name="all").click()
    page.wait_for_function("document.querySelector('[data-testid=learning-curves]')"
                           f"?.dataset.series === '{N_TRIALS}'")
    # Every trial has at least one marker; most stopped at the first rung (dashed, hollow).
    assert int(chart.get_attribute("data-markers")) >= N_TRIALS
    assert int(chart.get_attribute("data-stopped")) >= 4
    assert "stopped early" in page.get_by_test_id("curve-legend").inner_text()
    shot(page, out_dir, "curves")
    page.locator(".curves").screenshot(path=str(out_dir / "asha-readme.png"))


def test_trial_page_opens_on_the_searchers_metric(cluster, page, out_dir):
    client, exp_id = cluster["client"], cluster["asha"]
    trial = client.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["id"]
    page.goto(cluster["master"].url + f"/experiments/{exp_id}/trials/{trial}")
    select = page.get_by_label("trial metric")
    select.wait_for()
    # accuracy comes first in the alphabet; the searcher's metric is validation_loss.
    assert select.input_value() == "validation:validation_loss"
    page.get_by_test_id("trial-chart").wait_for()
    shot(page, out_dir, "trial-default-metric")


def test_hyperparameter_views(cluster, page, out_dir):
    exp_id = cluster["asha"]
    page.goto(cluster["master"].url + f"/experiments/{exp_id}?tab=hyperparameters")
    imp = page.get_by_test_id("hparam-importance")
    imp.wait_for()
    names = imp.locator("tbody tr td:first-child").all_inner_texts()
    assert set(names) == {"lr", "dropout", "optimizer"}, names
    par = page.get_by_test_id("parallel-coordinates")
    for axis in ("lr", "dropout", "optimizer", "validation_loss"):
        ticks = par.locator(f"g[data-axis='{axis}'] text.tick")
        assert ticks.count() >= 2, f"axis {axis} has {ticks.count()} ticks"
    assert "lr (log)" in par.text_content()
    # Hover: the trial's details.
    par.scroll_into_view_if_needed()
    at = par.locator("path.line").first.evaluate("""p => {
      const q = p.getPointAtLength(p.getTotalLength() * 0.15);
      const r = p.ownerSVGElement.getBoundingClientRect();
      return [r.left + q.x, r.top + q.y];
    }""")
    page.mouse.move(*at)
    tip = page.get_by_test_id("hp-tooltip").inner_text()
    assert "trial " in tip and "validation_loss: " in tip and "lr: " in tip
    page.mouse.move(0, 0)
    # Brushing: drag along the metric's axis keeps fewer trials.
    page.get_by_test_id("brush-validation_loss").scroll_into_view_if_needed()
    handle = page.get_by_test_id("brush-validation_loss").bounding_box()
    x = handle["x"] + handle["width"] / 2
    page.mouse.move(x, handle["y"] + handle["height"] * 0.55)
    page.mouse.down()
    page.mouse.move(x, handle["y"] + handle["height"] * 0.98, steps=5)
    page.mouse.up()
    selected = int(par.get_attribute("data-selected"))
    assert 0 < selected < N_TRIALS, selected
    assert par.locator("path.line.out").count() == N_TRIALS - selected
    slices = page.get_by_test_id("slice-plots").locator("svg[data-hparam]")
    assert slices.count() == 3
    assert page.get_by_test_id("slice-plots").locator("svg[data-hparam='lr'] text.tick").count() >= 4
    # The x-axis labels (side by side) do not run into each other: a log axis's round
    # 0.05 overlapped its end label 0.0646.
    for svg in [*slices.all(), page.get_by_test_id("contour-plot").locator("svg")]:
        overlaps = svg.evaluate(X_TICK_OVERLAPS)
        assert not overlaps, (svg.get_attribute("data-hparam"), overlaps)
    contour = page.get_by_test_id("contour-plot")
    assert contour.locator("rect").count() > 24 * 24 and contour.locator("circle").count() == N_TRIALS
    page.wait_for_function("document.querySelector('[data-testid=intermediate-values]')"
                           f"?.dataset.series === '{N_TRIALS}'")
    shot(page, out_dir, "hparams")


def test_tables_scroll_in_their_own_box_on_a_narrow_window(cluster, page, out_dir):
    page.set_viewport_size({"width": 420, "height": 800})
    try:
        page.goto(cluster["master"].url + f"/experiments/{cluster['asha']}?tab=trials")
        page.get_by_test_id("trials-table").wait_for()
        page.wait_for_timeout(300)
        # The page does not scroll sideways...
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        box = page.get_by_test_id("trials-table-scroll")
        assert box.evaluate("e => e.scrollWidth > e.clientWidth")  # ...the table's box does
        box.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        shot(page, out_dir, "narrow-table")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})


def _fits(page, locator, what):
    """``locator`` does not scroll sideways in its box, nor does the page."""
    widths = locator.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] <= widths[1], f"{what} scrolls sideways: {widths[0]} > {widths[1]} pixels"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), what


def test_curves_and_trial_pages_fit_an_800_pixel_window(cluster, page, out_dir):
    """At 800 pixels the trial picker beside the chart left the chart half the column: the
    picker goes under it. Neither page scrolls sideways, and neither do the experiment's
    trials table, the experiment list, the checkpoint tables and the parallel-coordinates
    chart in their boxes (long text and names wrap, the duration column goes, the chart
    takes its box's width)."""
    client, exp_id = cluster["client"], cluster["asha"]
    page.set_viewport_size({"width": 800, "height": 900})
    try:
        page.goto(cluster["master"].url + f"/experiments/{exp_id}")
        chart = page.get_by_test_id("learning-curves")
        chart.locator("canvas").wait_for()
        column = page.locator("nav.tabs").bounding_box()
        drawn = chart.bounding_box()
        picker = page.get_by_test_id("trial-picker").bounding_box()
        assert drawn["width"] >= 0.95 * column["width"], (drawn, column)
        assert picker["y"] >= drawn["y"] + drawn["height"], (picker, drawn)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, out_dir, "curves-800")
        page.goto(cluster["master"].url + f"/experiments/{exp_id}?tab=trials")
        page.get_by_test_id("trials-table").locator("tbody tr").first.wait_for()
        _fits(page, page.get_by_test_id("trials-table-scroll"), "the trials table")
        shot(page, out_dir, "trials-800")
        trial = client.get(f"/experiments/{exp_id}/trials").json()["trials"][0]["id"]
        page.goto(cluster["master"].url + f"/experiments/{exp_id}/trials/{trial}")
        page.get_by_test_id("trial-chart").locator("canvas").wait_for()
        page.get_by_test_id("trial-logs").locator(".log-line").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.get_by_test_id("checkpoints-table").locator("tbody tr").first.wait_for()
        _fits(page, page.get_by_test_id("checkpoints-table-scroll"), "the trial's checkpoint table")
        shot(page, out_dir, "trial-800")
        page.goto(cluster["master"].url + "/experiments")
        page.locator("[data-testid=experiment-table] tbody tr", has_text="asha search").wait_for()
        _fits(page, page.get_by_test_id("experiment-table-scroll"), "the experiment list")
        shot(page, out_dir, "experiments-800")
        page.goto(cluster["master"].url + f"/experiments/{exp_id}?tab=checkpoints")
        page.get_by_test_id("checkpoints-table").locator("tbody tr").first.wait_for()
        _fits(page, page.get_by_test_id("checkpoints-table-scroll"), "the experiment's checkpoint table")
        shot(page, out_dir, "checkpoints-800")
        page.goto(cluster["master"].url + f"/experiments/{exp_id}?tab=hyperparameters")
        par = page.get_by_test_id("parallel-coordinates")
        par.wait_for()
        page.wait_for_timeout(300)  # the chart takes its box's width once measured
        _fits(page, par.locator("xpath=.."), "the parallel-coordinates chart")
        box = par.locator("xpath=..").evaluate("e => e.clientWidth")
        assert par.bounding_box()["width"] <= box, (par.bounding_box(), box)
        shot(page, out_dir, "hparams-800")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})


def test_a_tensorboard_starts_from_the_experiment_page(cluster, page, out_dir):
    client, exp_id = cluster["client"], cluster["asha"]
    page.goto(cluster["master"].url + f"/experiments/{exp_id}")
    page.get_by_test_id("tensorboard").get_by_role("button", name="open TensorBoard").click()
    link = page.get_by_test_id("tensorboard-open")
    link.wait_for(timeout=240000)  # TensorBoard starts slowly on a loaded machine
    shot(page, out_dir, "tensorboard-launched")
    href = link.get_attribute("href")
    task_id = href.split("/")[2]
    task = client.get(f"/tasks/{task_id}").json()
    assert task["kind"] == "tensorboard" and task["state"] == "RUNNING"
    tab = page.context.new_page()
    try:
        # The link shows once TensorBoard answers through the proxy: one visit opens it.
        tab.goto(cluster["master"].url + href)
        tab.wait_for_function("document.title.includes('TensorBoard')", timeout=60000)
        tab.wait_for_timeout(1500)
        tab.screenshot(path=str(out_dir / "asha-tensorboard.png"))
    finally:
        tab.close()
        client.post(f"/tasks/{task_id}/kill")
    # Selected trials: a TensorBoard of those trials only.
    page.goto(cluster["master"].url + f"/experiments/{exp_id}?tab=trials")
    trials = client.get(f"/experiments/{exp_id}/trials").json()["trials"][:2]
    for t in trials:
        page.get_by_label(f"select trial {t['id']}", exact=True).check()
    page.get_by_role("button", name="TensorBoard for 2 selected trials").click()
    page.get_by_test_id("tensorboard-trials-task").wait_for()
    started = [t for t in client.get("/tasks", params={"kind": "tensorboard"}).json()["tasks"]
               if t["config"].get("trial_ids")]
    assert len(started) == 1
    assert sorted(started[0]["config"]["trial_ids"]) == sorted(t["id"] for t in trials)
    client.post(f"/tasks/{started[0]['id']}/kill")


def test_kill_and_cancel_ask_first(cluster, page, out_dir):
    client = cluster["client"]
    long_run = dict(yaml.safe_load(open(os.path.join(TINY, "const.yaml"))),
                    description="long run",
                    searcher={"name": "single", "metric": "validation_loss",
                              "max_length": {"batches": 1000000}})
    exp_id = create_experiment(client, long_run, TINY)
    page.goto(cluster["master"].url + f"/experiments/{exp_id}")
    page.get_by_test_id("kill-experiment").click()
    dialog = page.get_by_role("dialog")
    assert "Kill experiment" in dialog.inner_text()
    shot(page, out_dir, "confirm-kill")
    dialog.get_by_role("button", name="no, keep it").click()
    page.get_by_test_id("cancel-experiment").click()
    assert "Cancel experiment" in page.get_by_role("dialog").inner_text()
    time.sleep(1)
    assert client.get(f"/experiments/{exp_id}").json()["state"] == "ACTIVE"  # asked, not acted
    page.get_by_role("dialog").get_by_role("button", name="yes, cancel it").click()
    wait_for_state(client, exp_id, ["CANCELED", "STOPPING_CANCELED"], timeout=60)
    # A task's kill asks too.
    task = client.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 600", "resources": {"slots": 0}}}).json()
    page.goto(cluster["master"].url + "/tasks")
    row = page.locator("[data-testid=task-table] tbody tr", has_text=task["id"])
    row.locator("[data-testid=state]", has_text="RUNNING").wait_for(timeout=60000)
    page.get_by_test_id(f"kill-{task['id']}").click()
    assert "Kill command" in row.get_by_role("dialog").inner_text()
    shot(page, out_dir, "confirm-task-kill")
    assert client.get(f"/tasks/{task['id']}").json()["state"] == "RUNNING"
    row.get_by_role("button", name="yes, kill it").click()
    row.locator("[data-testid=state]", has_text="TERMINATED").wait_for(timeout=60000)


def test_a_failed_experiment_does_not_read_100_percent(cluster, page, out_dir):
    page.goto(cluster["master"].url + f"/experiments/{cluster['failed']}")
    progress = page.get_by_test_id("progress")
    progress.wait_for()
    assert progress.inner_text() == "failed"
    page.goto(cluster["master"].url + "/experiments")
    row = page.locator("[data-testid=experiment-table] tbody tr", has_text="broken")
    assert "failed" in row.get_by_test_id("progress").inner_text()
    assert "%" not in row.get_by_test_id("progress").inner_text()
    shot(page, out_dir, "failed-progress")
    # The failed trial's page says why at the top (it was only in the log, at the bottom),
    # offers no kill, and has no table of headers alone.
    trial = cluster["client"].get(f"/experiments/{cluster['failed']}/trials").json()["trials"][0]
    page.goto(cluster["master"].url + f"/experiments/{cluster['failed']}/trials/{trial['id']}")
    failure = page.get_by_test_id("trial-failure")
    # (The cause line: the traceback, folded below it, names it too.)
    failure.locator(".why", has_text="NoSuchTrial").wait_for()
    # The cause is the trial's error's; what followed, from its restarts and max_restarts.
    failure.get_by_text("no restarts left").wait_for()
    assert "Failed:" in failure.inner_text()
    cause = failure.locator(".why").inner_text()
    assert failure.inner_text().count(cause) == 1, failure.inner_text()
    assert failure.bounding_box()["y"] < page.get_by_test_id("hparams").bounding_box()["y"]
    assert page.get_by_test_id("kill-trial").count() == 0
    assert "None: the trial ended" in page.get_by_test_id("workloads-table").inner_text()
    page.get_by_test_id("trial-ended").wait_for()
    assert page.title() == (f"Trial {trial['id']} · ERROR · Experiment {cluster['failed']}"
                            " · Determined")
    shot(page, out_dir, "failed-trial")


def test_a_signed_out_visitor_sees_what_they_can_do(cluster, page, out_dir):
    client = cluster["client"]
    task = client.post("/tasks", json={"kind": "command", "config": {
        "entrypoint": "sleep 600", "resources": {"slots": 0}}}).json()
    token = page.evaluate("localStorage.getItem('det.token')")
    try:
        page.evaluate("localStorage.removeItem('det.token')")  # the master allows anonymous reads
        page.goto(cluster["master"].url + "/tasks")
        hint = page.get_by_test_id("signed-out-hint")
        hint.wait_for()
        assert "Sign in" in hint.inner_text() and "logs" in hint.inner_text()
        page.locator("[data-testid=task-table] tbody tr", has_text=task["id"]).wait_for()
        assert page.get_by_role("button", name="launch notebook").count() == 0
        shot(page, out_dir, "signed-out-tasks")
    finally:
        page.evaluate(f"localStorage.setItem('det.token', {token!r})")
        client.post(f"/tasks/{task['id']}/kill")


def test_det_lists_the_failed_experiment_as_failed(cluster):
    from det_cli_testing import run_det

    url = cluster["master"].url
    out = run_det(["-m", url, "e", "list"], timeout=120)
    assert out.returncode == 0, out.stderr
    broken = [line for line in out.stdout.splitlines() if "broken" in line]
    assert len(broken) == 1 and "failed" in broken[0] and "%" not in broken[0], out.stdout
    described = run_det(["-m", url, "e", "describe", str(cluster["failed"])], timeout=120)
    assert described.returncode == 0, described.stderr
    assert "failed" in described.stdout and "100%" not in described.stdout, described.stdout
