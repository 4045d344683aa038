"""`det shell start` and `det tensorboard start` end to end, on a real master.

Marked ``default_install``: CI runs these again in a venv made the README's way (the
default extras ``pytorch,examples``; scripts/test.sh), not only with every extra.
"""

import os
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from det_cli_testing import run_det, run_det_in_terminal
from master_testing import ConfiguredMasterProcess, create_experiment, wait_for_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.default_install]


@pytest.fixture
def master(tmp_path):
    m = ConfiguredMasterProcess(str(tmp_path / "master"), {"resource_manager": {"slots": 1}})
    os.makedirs(m.data_dir, exist_ok=True)
    m.start(timeout=120)
    yield m
    m.stop()


def _env(master) -> dict:
    return {"DET_MASTER": master.url}


def _broken_module_config(tmp_path, name: str) -> str:
    """A task config file whose PYTHONPATH holds a package ``name`` that fails on import
    (the service dies at once, as TensorBoard did on numpy 2)."""
    root = tmp_path / "broken"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(
        f"raise ImportError('{name} is broken in this environment (test)')\n")
    path = f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    config = tmp_path / "task.yaml"
    config.write_text(yaml.safe_dump({"environment": {
        "environment_variables": [f"PYTHONPATH={path}"]}}))
    return str(config)


def _task_states(master) -> list:
    c = httpx.Client(base_url=master.url, timeout=30)
    token = c.post("/api/v1/auth/login", json={"username": "determined",
                                               "password": ""}).json()["token"]
    return c.get("/api/v1/tasks", params={"all": "true"},
                 headers={"Authorization": f"Bearer {token}"}).json()["tasks"]


def test_shell_start_in_a_pipe_runs_commands_and_ends(master):
    out = subprocess.run([sys.executable, "-m", "determined.cli", "shell", "start"],
                         input="echo PIPED$((2+3))\nexit\n", capture_output=True, text=True,
                         timeout=180, env=dict(os.environ, **_env(master)))
    assert out.returncode == 0, out.stdout + out.stderr
    # Only the commands' output: no prompt, echo or terminal escapes.
    assert out.stdout == "PIPED5\n", out.stdout + out.stderr
    assert "Launched shell" in out.stderr
    # The readiness check did not make the shell's server log tracebacks.
    task_id = out.stderr.split("Launched shell ")[1].split()[0]
    logs = run_det(["shell", "logs", task_id], env=_env(master)).stdout
    assert "Traceback" not in logs, logs


def test_shell_start_in_a_pipe_exits_with_the_scripts_exit_code(master):
    out = subprocess.run([sys.executable, "-m", "determined.cli", "shell", "start"],
                         input="echo before >&2\nexit 3\necho never\n", capture_output=True,
                         text=True, timeout=180, env=dict(os.environ, **_env(master)))
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout == "before\n", out.stdout + out.stderr  # the shell's stderr too


def test_shell_start_in_a_terminal(master):
    # The terminal opens once the shell answers: until a command ran in it, it is typed
    # again every few seconds; then the shell is left with `exit 5`, which det exits with.
    # The remote shell starts with the terminal's size.
    typed = {"at": None, "exit": False}

    def respond(text):
        if "Launched shell" not in text or typed["exit"]:
            return None
        if "MARK42" in text:
            typed["exit"] = True
            return b"exit 5\r"
        if typed["at"] is None or time.monotonic() - typed["at"] >= 5:
            typed["at"] = time.monotonic()
            return b"stty size; echo MARK$((6*7))\r"
        return None

    code, text = run_det_in_terminal(["shell", "start"], rows=27, columns=83,
                                     env=_env(master), timeout=300.0, respond=respond,
                                     idle=0.5)
    assert code == 5 and typed["exit"], text  # the remote shell's exit code, as ssh
    assert "27 83" in text, text


def test_shell_start_that_dies_at_once_reports_the_exit(master, tmp_path):
    config = _broken_module_config(tmp_path, "websockets")
    out = run_det(["shell", "start", "--config-file", config],
                  env=_env(master), timeout=180)
    assert out.returncode != 0, out.stdout + out.stderr
    assert "before it was ready" in out.stderr and "exited with code" in out.stderr, out.stderr
    assert "websockets is broken in this environment" in out.stderr, out.stderr
    assert out.stdout == ""


@pytest.fixture
def finished_experiment(master, tiny_dir):
    config = {
        "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2,
                            "lr": {"type": "categorical", "vals": [0.1, 0.05]}},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 20}},
        "min_validation_period": {"batches": 20},
    }
    client = master.client()
    exp_id = create_experiment(client, config, tiny_dir)
    wait_for_state(client, exp_id, ["COMPLETED"], timeout=300)
    return exp_id


def test_tensorboard_start_shows_the_trials_runs(master, finished_experiment):
    out = run_det(["tensorboard", "start", str(finished_experiment), "--no-browser"],
                  env=_env(master), timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    url = out.stdout.strip()
    assert "/proxy/" in url and "det_token=" in url, out.stdout
    browser = httpx.Client(follow_redirects=True, timeout=30)
    assert browser.get(url).status_code == 200
    runs_url = url.split("?")[0].rstrip("/") + "/data/runs"
    trials = master.client().get(f"/experiments/{finished_experiment}/trials").json()["trials"]

    def runs():
        names = browser.get(runs_url).json()
        return names if len(names) == len(trials) else None

    names = wait_until(runs, 120, "TensorBoard runs of both trials")
    assert sorted(int(n.split()[0].split("_")[1]) for n in names) == \
        sorted(t["id"] for t in trials)
    tags = browser.get(url.split("?")[0].rstrip("/") + "/data/plugin/scalars/tags").json()
    assert "Determined/loss" in tags[names[0]], tags


def test_tensorboard_that_dies_at_once_is_not_reported_started(master, finished_experiment,
                                                              tmp_path):
    config = _broken_module_config(tmp_path, "tensorboard")
    out = run_det(["tensorboard", "start", str(finished_experiment), "--no-browser",
                   "--config-file", config],
                  env=_env(master), timeout=240)
    assert out.returncode != 0, out.stdout + out.stderr
    assert "/proxy/" not in out.stdout, out.stdout
    assert "before it was ready" in out.stderr, out.stderr
    assert "tensorboard is broken in this environment" in out.stderr, out.stderr
    tb = [t for t in _task_states(master) if t["kind"] == "tensorboard"]
    assert [t["state"] for t in tb] == ["TERMINATED"]
