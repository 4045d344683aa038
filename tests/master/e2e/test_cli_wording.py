"""The CLI's wording on a real master: `--follow` counts, Ctrl-C while following, a failed
login, a master URL with a path, and the master's log (lifecycle events, not noise)."""

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from det_cli_testing import run_det
from master_testing import LONG_CONFIG, MasterProcess, slow_model_dir, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def master(tmp_path):
    m = MasterProcess(str(tmp_path / "master"), slots=1)
    os.makedirs(m.data_dir)
    m.start(timeout=120)
    yield m
    m.stop()


def _token(master) -> str:
    return httpx.post(master.url + "/api/v1/auth/login",
                      json={"username": "determined", "password": ""}).json()["token"]


def test_follow_says_running_and_waiting_and_ctrl_c_says_how_to_stop(master, tmp_path,
                                                                    tiny_dir):
    # Three trials open at once on one slot: one runs, two wait for it. Slowed (about
    # 10 s a trial), the search is still running when the test kills it below, even on
    # a loaded machine.
    config = dict(LONG_CONFIG, entrypoint="slow_def:SlowTrial", searcher={
        "name": "adaptive_asha", "metric": "validation_loss", "max_trials": 6,
        "max_concurrent_trials": 3, "max_length": {"batches": 2000}},
        hyperparameters=dict(LONG_CONFIG["hyperparameters"], sleep=0.005, lr={
            "type": "double", "minval": 0.01, "maxval": 0.1}))
    model_dir = slow_model_dir(tiny_dir, tmp_path)
    path = tmp_path / "asha.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.Popen([sys.executable, "-m", "determined.cli", "experiment", "create",
                             str(path), model_dir, "--follow"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, DET_MASTER=master.url))
    lines = []
    try:
        deadline = time.monotonic() + 180
        while not any("1 running, 2 waiting" in line for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            lines.append(proc.stderr.readline())
        proc.send_signal(signal.SIGINT)
        rest_out, rest_err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, rest_err
    exp_id = int(rest_out.split("Created experiment ")[1].split()[0])
    assert f"experiment {exp_id} keeps running on the master" in rest_err, rest_err
    assert f"det experiment kill {exp_id}" in rest_err, rest_err
    assert f"det experiment wait {exp_id}" in rest_err, rest_err
    assert not any("3 running" in line for line in lines), lines
    c = master.client()
    c.headers["Authorization"] = f"Bearer {_token(master)}"
    assert c.get(f"/experiments/{exp_id}").json()["state"] == "ACTIVE"
    # The command it names works.
    out = run_det(["experiment", "kill", exp_id], env={"DET_MASTER": master.url})
    assert out.returncode == 0, out.stderr
    # The master's log tells the story in lifecycle lines.
    def log() -> str:
        return run_det(["master", "logs"], env={"DET_MASTER": master.url}).stdout

    text = wait_until(lambda: (lambda t: t if f"lifecycle: experiment {exp_id} CANCELED"
                               in t or f"lifecycle: experiment {exp_id} ERROR" in t
                               else None)(log()), 120, "the experiment's end logged")
    assert f"lifecycle: experiment {exp_id} created by determined (searcher adaptive_asha)" \
        in text, text
    assert f"lifecycle: experiment {exp_id} ACTIVE" in text
    assert text.count(f"of experiment {exp_id} created") == 3, text
    assert f"of experiment {exp_id} scheduled on embedded slots [0]" in text, text


def test_failed_login_says_what_to_check(master):
    out = run_det(["-m", master.url, "user", "login", "determined", "--password", "wrong"])
    assert out.returncode == 1
    assert "Could not log in" in out.stderr and "Check the user name" in out.stderr, out.stderr
    assert "user login determined`" not in out.stderr, out.stderr


def test_master_url_with_a_path_is_a_clear_error(master):
    out = run_det(["-m", master.url + "/det/experiments", "experiment", "list"])
    assert out.returncode == 1
    assert "Not Found" not in out.stderr
    assert f"without a path; use {master.url}" in out.stderr, out.stderr


def test_master_log_shows_lifecycle_not_migrations_or_proxied_requests(master):
    headers = {"Authorization": f"Bearer {_token(master)}"}
    c = httpx.Client(base_url=master.url, headers=headers, timeout=60)
    shell = c.post("/api/v1/tasks", json={"kind": "shell"}).json()
    wait_until(lambda: c.get(f"/proxy/{shell['id']}/").status_code == 200, 120, "shell")
    for _ in range(5):
        assert c.get(f"/proxy/{shell['id']}/").status_code == 200
    assert c.post(f"/api/v1/tasks/{shell['id']}/kill").status_code == 200
    wait_until(lambda: c.get(f"/api/v1/tasks/{shell['id']}").json()["state"] == "TERMINATED",
               60, "shell ended")
    out = run_det(["master", "logs"], env={"DET_MASTER": master.url})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "alembic" not in text and "Running upgrade" not in text, text
    assert "HTTP Request" not in text and f"/proxy/{shell['id']}" not in text, text
    assert f"lifecycle: task {shell['id']} (shell) created by determined" in text, text
    assert f"lifecycle: task {shell['id']} (shell) RUNNING" in text, text
    assert f"lifecycle: task {shell['id']} (shell) TERMINATED: killed" in text, text
    assert len(text.splitlines()) < 20, text
