"""The trial page in a real browser (Debian's Chromium through Playwright) shows a trial's
GPU utilization and memory when its agent sampled its GPU, and no GPU section at all for
a trial that ran on no GPU. A master, a remote agent whose (stand-in) NVML lists one GPU,
and a CPU agent; real trials on each."""

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, AgentProcess  # noqa: E402
from determined.master import webui  # noqa: E402
from gpu_testing import env_config, env_model_dir, fake_gpus, fake_nvml_env  # noqa: E402
from master_testing import create_experiment, wait_for_state, wait_until  # noqa: E402

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--no-first-run"]
TOKEN = "gpu-browser-agent-token"


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    assert webui.is_built(), "the web UI is not built: run scripts/build-webui.sh"
    assert os.path.exists(CHROMIUM), "install Debian's chromium (apt-get install chromium)"
    root = tmp_path_factory.mktemp("gpu-browser")
    with AgentCluster(root, {"resource_manager": {"slots": 0},
                             "security": {"agent_token": TOKEN}}) as c:
        for agent_id, label, gpus in (("gpu-agent", "gpu", fake_gpus(1)),
                                      ("cpu-agent", "cpu", None)):
            c.agents[agent_id] = AgentProcess(
                c.master.url, agent_id, root, slots=None if gpus else 1, token=TOKEN,
                label=label, extra_args=["--gpu-metrics-interval", "0.2"],
                env=fake_nvml_env(gpus)).start()
        wait_until(lambda: {"gpu-agent", "cpu-agent"} <= set(c.agent_ids()), 60, "agents")
        model = env_model_dir(root)
        found = {}
        with c.master.client() as api:
            for label in ("gpu", "cpu"):
                exp_id = create_experiment(api, env_config(trials=1, label=label, sleep=0.1),
                                           model)
                exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], 300)
                assert exp["state"] == "COMPLETED", exp
                found[label] = (exp_id, exp["trials"][0]["id"])
            gpu_trial = found["gpu"][1]
            assert api.get(f"/trials/{gpu_trial}/gpu-metrics").json()["gpu_metrics"]
        yield c.master.url, found


@pytest.fixture(scope="module")
def page(trials):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(30000)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.errors = errors
        yield page
        browser.close()


def _open_trial(page, url, exp_id, trial_id):
    with page.expect_response(lambda r: r.url.endswith(f"/trials/{trial_id}/gpu-metrics")):
        page.goto(url + f"/experiments/{exp_id}/trials/{trial_id}")
    page.get_by_test_id("workloads-table").wait_for()  # the page has loaded its data
    page.get_by_test_id("trial-chart").wait_for()  # and drawn its learning curve


def test_trial_page_shows_gpu_utilization_and_memory(trials, page):
    url, found = trials
    _open_trial(page, url, *found["gpu"])
    section = page.get_by_test_id("gpu-metrics")
    section.wait_for()
    assert "GPU 0 (GPU-fake-0, 16.0 GiB)" in section.inner_text()
    for chart in ("gpu-utilization-chart", "gpu-memory-chart"):
        page.wait_for_function(f"Number(document.querySelector('[data-testid={chart}]')"
                               "?.dataset.points) > 0")
        assert page.get_by_test_id(chart).get_attribute("data-series") == "1"
    assert not page.errors, page.errors


def test_trial_page_without_gpu_samples_has_no_gpu_section(trials, page):
    url, found = trials
    _open_trial(page, url, *found["cpu"])
    page.wait_for_timeout(300)  # its answer ([]) has been rendered
    assert page.get_by_test_id("gpu-metrics").count() == 0
    assert page.get_by_text("GPUs", exact=True).count() == 0
    assert not page.errors, page.errors
