"""``det trial logs -f``, ``det cmd logs -f``, ``det cmd run`` and ``det e create
--follow`` print every stored line once, and return as soon as the master says the log
is complete (``complete`` on its log pages) -- without waiting for a quiet period.

A real master, the real ``det`` in a subprocess, and between them a loopback proxy that
records every log read and can make a late line happen at the worst moment: stored (in
the master's real SQLite database) just after the CLI read what it could take for the
end. With the master's flag the proxy makes that answer say ``complete: false`` (a line
is on its way); as a master without the flag (the proxy strips it) it stores the line
after the first log read that follows a served end state, so only a CLI that reads on
after the end prints it.
"""

import dataclasses
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from typing import Callable, Dict, List, Optional, Tuple

import httpx
import pytest

from det_cli_testing import run_det
from determined.common.api._log_tail import PAGE
from determined.master.db import Store
from master_testing import create_experiment, slow_model_dir, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

_STATE_PATH = re.compile(r"^/api/v1/(trials|tasks)/([^/?]+)(\?.*)?$")
_LOGS_PATH = re.compile(r"^/api/v1/(trials|tasks)/([^/?]+)/logs(\?.*)?$")
_ENDED = {"COMPLETED", "CANCELED", "ERROR", "TERMINATED"}


@dataclasses.dataclass
class Read:
    """One log read as the CLI got it."""

    key: str  # trials/ID or tasks/ID
    lines: int
    complete: Optional[bool]


class LogProxy:
    """Forwards every request to ``upstream`` and records the log reads (``reads``) and
    the states served (``states``).

    Args:
        store_late: if given, stores one late line per trial or task (``(kind, id)`` ->
            the line): after the first log answer that says ``complete``, which then
            says false; with ``flag=False`` after the first log read that follows a
            served end state.
        flag: False: log answers lose ``complete`` (a master that does not say).
    """

    def __init__(self, upstream: str, store_late: Optional[Callable[[str, str], str]] = None,
                 flag: bool = True):
        self.stored: Dict[str, str] = {}
        self.states: List[Tuple[str, str]] = []  # (trials/ID or tasks/ID, state) served
        self.reads: List[Read] = []
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
                content = resp.content
                state = _STATE_PATH.match(self.path)
                logs = _LOGS_PATH.match(self.path)
                served = state and resp.status_code == 200 and resp.json().get("state")
                if served:
                    key = f"{state.group(1)}/{state.group(2)}"
                    proxy.states.append((key, served))
                    if not flag and served in _ENDED and key not in proxy.stored:
                        armed["key"] = key  # once per trial or task (read twice: once)
                if logs and resp.status_code == 200:
                    key = f"{logs.group(1)}/{logs.group(2)}"
                    page = resp.json()
                    late = store_late is not None and key not in proxy.stored and (
                        armed["key"] == key if not flag else page.get("complete"))
                    if late:
                        armed["key"] = None
                        proxy.stored[key] = store_late(logs.group(1), logs.group(2))
                        page["complete"] = False  # the master's own answer, had it known
                    if not flag:
                        page.pop("complete", None)
                    proxy.reads.append(Read(key, len(page["logs"]), page.get("complete")))
                    content = json.dumps(page).encode()
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reads_after_complete(self, key: str) -> int:
        """How many times the CLI read ``key``'s log after an answer that ended it."""
        reads = [r for r in self.reads if r.key == key]
        ends = [i for i, r in enumerate(reads) if r.complete and r.lines < PAGE]
        assert ends, f"no read of {key} was answered complete: {reads}"
        return len(reads) - ends[0] - 1

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def ended_master(master_factory):
    return master_factory(slots=1)


def _store(master) -> Store:
    return Store("sqlite:///" + os.path.join(master.data_dir, "master.db"))


def _late_proxy(master, store: Store, flag: bool = True) -> LogProxy:
    def store_late(kind: str, id: str) -> str:
        line = f"late line of {kind} {id}" + ("" if flag else " (no flag)")
        if kind == "trials":
            store.add_logs(int(id), [line])
        else:
            store.add_task_logs(id, [line])
        return line

    return LogProxy(master.url, store_late, flag=flag)


def _follow_through(proxy: LogProxy, args: List[str], timeout: float = 120):
    try:
        return run_det(["-m", proxy.url, *args], timeout=timeout)
    finally:
        proxy.close()


def _create_and_follow(master, tiny_dir, tmp_path) -> Tuple[int, LogProxy]:
    """`det e create --follow` of a one-trial experiment through a recording proxy."""
    path = tmp_path / "c.yaml"
    path.write_text((tiny_dir / "const.yaml").read_text())
    proxy = LogProxy(master.url)
    created = _follow_through(proxy, ["e", "create", path, tiny_dir, "--follow"], 400)
    assert created.returncode == 0, created.stdout + created.stderr
    trials = httpx.get(master.url + "/api/v1/experiments/1").json()["trials"]
    return trials[0]["id"], proxy


def test_follows_return_once_the_master_says_the_log_is_complete(ended_master, tiny_dir,
                                                                 tmp_path):
    """Each follow stops at the first log page that says the log is complete: no read
    after it. (Reading on until 1 s passed without a line made every one of them return
    about 1 s late, with a few more reads.)"""
    store = _store(ended_master)
    proxy = LogProxy(ended_master.url)
    run = _follow_through(proxy, ["cmd", "run", "echo", "first"], 180)
    assert run.returncode == 0, run.stderr
    task_id = re.search(r"Launched command (\S+)", run.stderr).group(1)
    assert run.stdout.splitlines() == [line.line for line in store.get_task_logs(task_id)]
    assert proxy.reads_after_complete(f"tasks/{task_id}") == 0

    proxy = LogProxy(ended_master.url)
    out = _follow_through(proxy, ["cmd", "logs", "-f", task_id, "--tail", "1"])
    assert out.returncode == 0 and out.stdout == "first\n", out.stdout + out.stderr
    assert len(proxy.reads) == 1  # its newest line, complete: nothing to follow

    trial_id, proxy = _create_and_follow(ended_master, tiny_dir, tmp_path)
    assert proxy.reads_after_complete(f"trials/{trial_id}") == 0

    proxy = LogProxy(ended_master.url)
    out = _follow_through(proxy, ["t", "logs", "-f", trial_id])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [line.line for line in store.get_logs(trial_id)]
    assert len(proxy.reads) == 1 and not proxy.states  # one page ended it
    store.close()


def test_trial_logs_follow_prints_a_line_stored_after_the_end(ended_master, tiny_dir,
                                                              tmp_path):
    trial_id, _ = _create_and_follow(ended_master, tiny_dir, tmp_path)
    store = _store(ended_master)
    for flag in (True, False):
        proxy = _late_proxy(ended_master, store, flag=flag)
        out = _follow_through(proxy, ["t", "logs", "-f", trial_id])
        assert out.returncode == 0, out.stderr
        late = proxy.stored[f"trials/{trial_id}"]  # the proxy did store it, after the end
        lines = out.stdout.splitlines()
        assert lines.count(late) == 1, (flag, lines[-5:])
        assert lines == [line.line for line in store.get_logs(trial_id)]  # all, once, in order
    store.close()


def test_task_logs_follow_and_cmd_run_print_a_line_stored_after_the_end(ended_master):
    store = _store(ended_master)
    for flag in (True, False):
        proxy = _late_proxy(ended_master, store, flag=flag)
        run = _follow_through(proxy, ["cmd", "run", "echo", "first"], 180)
        assert run.returncode == 0, run.stderr
        task_id = re.search(r"Launched command (\S+)", run.stderr).group(1)
        late = proxy.stored[f"tasks/{task_id}"]
        assert run.stdout.splitlines().count(late) == 1, (flag, run.stdout)
        assert "first" in run.stdout.splitlines()

    for flag in (True, False):
        proxy = _late_proxy(ended_master, store, flag=flag)
        out = _follow_through(proxy, ["cmd", "logs", "-f", task_id])
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        # Every stored line once, in order; the last was stored after this tail read the end.
        assert lines == [line.line for line in store.get_task_logs(task_id)]
        assert lines[-1] == proxy.stored[f"tasks/{task_id}"], (flag, lines)
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
    store = _store(ended_master)
    proxy = _late_proxy(ended_master, store)
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
