"""``det trial logs -f``, ``det cmd logs -f`` and ``det cmd run`` print every stored line
once, also lines stored just after the trial or task was seen ended (the master and the
agents store the last lines of a trial or task right after its state changed).

A real master, the real ``det`` in a subprocess, and between them a loopback proxy that
makes that late line happen at the worst moment: right after the end was served to the
CLI, it stores a line (in the master's real SQLite database) just after answering the
CLI's next log read, so only a CLI that reads on after the end prints it.
"""

import http.server
import os
import re
import subprocess
import sys
import threading
from typing import Callable, Dict, List, Optional, Tuple

import httpx
import pytest
import yaml

from det_cli_testing import run_det
from determined.master.db import Store
from master_testing import create_experiment, slow_model_dir, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

_STATE_PATH = re.compile(r"^/api/v1/(trials|tasks)/([^/?]+)(\?.*)?$")
_LOGS_PATH = re.compile(r"^/api/v1/(trials|tasks)/([^/?]+)/logs(\?.*)?$")
_ENDED = {"COMPLETED", "CANCELED", "ERROR", "TERMINATED"}


class LateLineProxy:
    """Forwards every request to ``upstream``; once a trial's or task's ended state was
    served, the next read of its log gets its answer and then ``store_late(kind, id)``
    runs before the answer is sent (so it is stored after that read, before any next)."""

    def __init__(self, upstream: str, store_late: Callable[[str, str], None]):
        self.stored: Dict[str, str] = {}
        self.states: List[Tuple[str, str]] = []  # (trials/ID or tasks/ID, state) served
        armed: Dict[str, Optional[str]] = {"key": None}
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                resp = httpx.request(self.command, upstream + self.path, content=body,
                                     headers=headers, timeout=60)
                state = _STATE_PATH.match(self.path)
                logs = _LOGS_PATH.match(self.path)
                served = state and resp.status_code == 200 and resp.json().get("state")
                if served:
                    proxy.states.append((f"{state.group(1)}/{state.group(2)}", served))
                if served in _ENDED and state.group(2) not in proxy.stored:
                    # One late line per trial or task (the CLI may read the end twice).
                    armed["key"] = f"{state.group(1)}/{state.group(2)}"
                elif logs and armed["key"] == f"{logs.group(1)}/{logs.group(2)}":
                    armed["key"] = None
                    proxy.stored[logs.group(2)] = store_late(logs.group(1), logs.group(2))
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                self.wfile.write(resp.content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ended_master(master_factory):
    return master_factory(slots=1)


def _proxy(master):
    store = Store("sqlite:///" + os.path.join(master.data_dir, "master.db"))

    def store_late(kind: str, id: str) -> str:
        line = f"late line of {kind} {id}"
        if kind == "trials":
            store.add_logs(int(id), [line])
        else:
            store.add_task_logs(id, [line])
        return line

    return LateLineProxy(master.url, store_late), store


def test_trial_logs_follow_prints_a_line_stored_after_the_end(ended_master, tiny_dir,
                                                              tmp_path):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    created = run_det(["-m", ended_master.url, "e", "create", path, tiny_dir, "--follow"],
                      timeout=400)
    assert created.returncode == 0, created.stdout + created.stderr
    trials = httpx.get(ended_master.url + "/api/v1/experiments/1").json()["trials"]
    trial_id = trials[0]["id"]
    proxy, store = _proxy(ended_master)
    try:
        out = run_det(["-m", proxy.url, "t", "logs", "-f", trial_id], timeout=120)
    finally:
        proxy.close()
    assert out.returncode == 0, out.stderr
    late = proxy.stored[str(trial_id)]  # the proxy did store it, after the end
    lines = out.stdout.splitlines()
    assert lines.count(late) == 1, lines[-5:]
    stored = [line.line for line in store.get_logs(trial_id)]
    assert lines == stored  # every stored line, once, in order
    store.close()


def test_task_logs_follow_and_cmd_run_print_a_line_stored_after_the_end(ended_master):
    proxy, store = _proxy(ended_master)
    try:
        run = run_det(["-m", proxy.url, "cmd", "run", "echo", "first"], timeout=180)
        assert run.returncode == 0, run.stderr
        task_id = re.search(r"Launched command (\S+)", run.stderr).group(1)
        assert run.stdout.splitlines().count(f"late line of tasks {task_id}") == 1, run.stdout
        assert "first" in run.stdout.splitlines()

        out = run_det(["-m", proxy.url, "cmd", "logs", "-f", task_id], timeout=120)
    finally:
        proxy.close()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Every stored line once, in order; the last was stored after this tail saw the end.
    assert lines == [line.line for line in store.get_task_logs(task_id)]
    assert lines[-1] == f"late line of tasks {task_id}"
    store.close()


def test_trial_logs_follow_goes_on_through_a_pause(ended_master, tiny_dir, tmp_path):
    """A PAUSED trial has not ended: `det trial logs -f` stopped there, missing what its
    trial printed once its experiment went on (here: the line of its cancellation)."""
    api = httpx.Client(base_url=ended_master.url + "/api/v1", timeout=60)
    config = {
        "entrypoint": "slow_def:SlowTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2, "sleep": 0.05},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 5000}},
    }
    exp_id = create_experiment(api, config, slow_model_dir(tiny_dir, tmp_path))
    trial_id = wait_until(lambda: [t["id"] for t in api.get(f"/experiments/{exp_id}").json()
                                   ["trials"] if t["total_batches"] >= 10], 180, "training")[0]
    assert run_det(["-m", ended_master.url, "e", "pause", exp_id]).returncode == 0
    wait_until(lambda: api.get(f"/trials/{trial_id}").json()["state"] == "PAUSED", 120,
               "the trial PAUSED")
    proxy, store = _proxy(ended_master)
    follower = subprocess.Popen(
        [sys.executable, "-m", "determined.cli", "-m", proxy.url, "t", "logs", "-f",
         str(trial_id)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (f"trials/{trial_id}", "PAUSED") in proxy.states, 120,
                   "the follower to see the trial PAUSED")
        assert run_det(["-m", ended_master.url, "e", "kill", exp_id]).returncode == 0
        out, err = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
        proxy.close()
        api.close()
    assert follower.returncode == 0, err
    lines = out.splitlines()
    assert lines == [line.line for line in store.get_logs(trial_id)]
    # Its end after the pause: canceled, or killed if the kill found it still stopping.
    assert any(line.startswith("[determined] Trial") and ("cancel" in line.lower()
                                                          or "killed" in line.lower())
               for line in lines[-3:]), lines[-3:]
    store.close()
