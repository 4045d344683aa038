"""The master's ``Experiments`` service: API requests and trial-runner reports on one
experiment at the same time stay consistent; the experiments package does not import
the master's core.

A real master on a loopback port with real SQLite. The trial's process blocks at import
after writing its token next to its code, so the test reports as its runner would while
other threads pause, activate, edit and read the experiment.
"""

import ast
import os
import pathlib
import sqlite3
import subprocess
import sys
import threading
from typing import Any, Dict, List, Tuple

import httpx
import pytest

from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = pytest.mark.timeout(300)

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "determined"

BLOCKER = '''"""Writes the runner's token to the file hyperparameter token_file names,
then blocks the runner."""
import json
import os
import time

with open(os.environ["DET_TRIAL_SPEC"]) as f:
    _path = json.load(f)["env"]["hparams"]["token_file"]
with open(_path + ".tmp", "w") as f:
    f.write(os.environ["DET_TRIAL_TOKEN"])
os.replace(_path + ".tmp", _path)
time.sleep(3600)


class Blocker:
    pass
'''

CONFIG = {
    "entrypoint": "blocker_def:Blocker",
    "hyperparameters": {"global_batch_size": 4},
    "searcher": {"name": "single", "metric": "validation_loss",
                 "max_length": {"batches": 100000}},
}

REPORTS = 120


def _runner(api_url: str, token: str, statuses: List[Tuple[str, int]]) -> None:
    """Report as one trial runner does: training in order, a validation every tenth."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=api_url + "/trial-runner", headers=headers, timeout=60) as c:
        for i in range(1, REPORTS + 1):
            r = c.post("/training", json={"batches": 10 * i,
                                          "metrics": {"avg_metrics": {"loss": 1.0 / i}}})
            statuses.append(("training", r.status_code))
            if i % 10 == 0:
                r = c.post("/validation", json={
                    "batches": 10 * i, "metrics": {"validation_metrics": {"validation_loss": 1.0 / i}}})
                statuses.append(("validation", r.status_code))
                r = c.get("/is-best", params={"value": 0.5 / i})
                statuses.append(("is-best", r.status_code))
                assert r.status_code != 200 or r.json()["best"] is True, r.text


def _user(api_url: str, exp_id: int, trial_id: int, rounds: int,
          statuses: List[Tuple[str, int]]) -> None:
    """Pause, read, edit and activate the experiment, over and over."""
    with httpx.Client(base_url=api_url, timeout=60) as c:
        for n in range(rounds):
            for method, path, body in (
                    ("POST", f"/experiments/{exp_id}/pause", None),
                    ("GET", f"/experiments/{exp_id}", None),
                    ("PATCH", f"/experiments/{exp_id}", {"weight": 1.0 + n % 3}),
                    ("GET", "/agents", None),
                    ("POST", f"/experiments/{exp_id}/activate", None),
                    ("GET", f"/trials/{trial_id}", None)):
                r = c.request(method, path, json=body)
                statuses.append((f"{method} {path}", r.status_code))


def _blocked_trial(api: httpx.Client, tmp_path: pathlib.Path) -> Tuple[int, Dict[str, Any], str]:
    """Start an experiment whose one trial blocks: (experiment id, trial, its token)."""
    model = tmp_path / "blocker"
    model.mkdir()
    (model / "blocker_def.py").write_text(BLOCKER)
    token_path = str(tmp_path / "token")
    config = dict(CONFIG, hyperparameters=dict(CONFIG["hyperparameters"],
                                               token_file=token_path))
    exp_id = create_experiment(api, config, model)
    wait_until(lambda: os.path.exists(token_path), timeout=120, what="the trial's token")
    with open(token_path) as f:
        token = f.read().strip()
    (trial,) = api.get(f"/experiments/{exp_id}").json()["trials"]
    return exp_id, trial, token


def test_concurrent_api_requests_and_runner_reports_stay_consistent(master_factory, tmp_path):
    master = master_factory(slots=1)
    api_url = master.url + "/api/v1"
    with master.client() as api:
        exp_id, trial, token = _blocked_trial(api, tmp_path)

        statuses: List[Tuple[str, int]] = []
        threads = [threading.Thread(target=_runner, args=(api_url, token, statuses))]
        threads += [threading.Thread(target=_user, args=(api_url, exp_id, trial["id"], 15,
                                                         statuses)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        assert not any(t.is_alive() for t in threads), "requests hung (a lock cycle?)"

        refused = [(what, code) for what, code in statuses if code != 200]
        assert not refused, refused
        assert sum(1 for what, _ in statuses if what == "training") == REPORTS
        # Every report stored once, in order, whatever the experiment went through.
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        training = [m["total_batches"] for m in metrics if m["kind"] == "training"]
        validation = [(m["total_batches"], m["metrics"]["validation_loss"])
                      for m in metrics if m["kind"] == "validation"]
        assert training == [10 * i for i in range(1, REPORTS + 1)]
        assert validation == [(10 * i, 1.0 / i) for i in range(10, REPORTS + 1, 10)]
        exp = api.get(f"/experiments/{exp_id}").json()
        assert exp["state"] == "ACTIVE", exp  # each user's last action was activate
        assert exp["trials"][0]["best_validation"] == pytest.approx(1.0 / REPORTS)

        # The kill goes through the service: the process dies, the trial ends, and the
        # runner's token no longer reaches the experiment.
        assert api.post(f"/experiments/{exp_id}/kill").status_code == 200
        done = wait_for_state(api, exp_id, ["CANCELED", "ERROR", "COMPLETED"], timeout=60)
        assert done["state"] == "CANCELED", done
        assert done["trials"][0]["state"] == "CANCELED", done
        r = httpx.post(api_url + "/trial-runner/training", timeout=30,
                       headers={"Authorization": f"Bearer {token}"},
                       json={"batches": 10 * REPORTS + 10, "metrics": {}})
        assert r.status_code == 401, r.text
        assert api.post(f"/experiments/{exp_id}/kill").status_code == 200  # ended: no-op
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 409


def test_a_run_that_fails_to_continue_after_a_restart_is_aborted_by_its_core(
        master_factory, tmp_path):
    master = master_factory(slots=1)
    with master.client() as api:
        exp_id, trial, token = _blocked_trial(api, tmp_path)
        headers = {"Authorization": f"Bearer {token}"}
        for batches in (10, 20, 30):  # trained past its (absent) checkpoint
            r = httpx.post(master.url + "/api/v1/trial-runner/training", headers=headers,
                           json={"batches": batches, "metrics": {}}, timeout=30)
            assert r.status_code == 200, r.text
        # Pausing saves a snapshot with the trial stopping: its process counts as live.
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
    master.sigkill()
    # The restarted master must roll those rows back; the database refuses it.
    db = sqlite3.connect(os.path.join(master.data_dir, "master.db"))
    db.execute("CREATE TRIGGER keep_metrics BEFORE DELETE ON metrics "
               "BEGIN SELECT RAISE(ABORT, 'metrics are kept'); END")
    db.commit()
    db.close()
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    with again.client() as api:
        exp = api.get(f"/experiments/{exp_id}").json()
        # The core's abort: the experiment ERROR, its unfinished trial CANCELED (a run
        # that cannot even be built would leave its trials ERROR instead).
        assert exp["state"] == "ERROR", exp
        assert exp["trials"][0]["state"] == "CANCELED", exp
        logs = [ln["line"] for ln in api.get(f"/trials/{trial['id']}/logs").json()["logs"]]
        assert any("the experiment was aborted" in ln and "could not be restored at master "
                   "start" in ln and "metrics are kept" in ln for ln in logs), logs
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 409
        assert api.get("/master").status_code == 200


def _imports(path: pathlib.Path) -> List[str]:
    names: List[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def test_master_experiments_do_not_import_the_master_core():
    # Every import, TYPE_CHECKING ones too: the experiments see the master only
    # through ExperimentHost.
    found: Dict[str, Any] = {}
    for path in sorted((SRC / "master" / "experiments").glob("*.py")):
        bad = [n for n in _imports(path)
               if n == "determined.master._core" or n.startswith("determined.master.api")]
        if bad:
            found[path.name] = bad
    assert not found, found
    # And at run time: importing the package loads neither the core nor the API.
    code = ("import sys, determined.master.experiments; "
            "print(sorted(m for m in ('determined.master._core', 'determined.master.api') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=str(SRC.parent)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_api_routes_reach_experiments_only_through_the_service():
    api = SRC / "master" / "api"
    uses = {}
    for path in sorted(api.glob("*.py")):
        text = path.read_text()
        hits = [w for w in ("master.lock", "master.runs", "master.trials", "master.allocations")
                if w in text]
        if hits:
            uses[path.name] = hits
    assert not uses, uses
