"""Helpers for tests against a real master (``python -m determined.master``) on a free loopback port."""

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Optional

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MasterProcess:
    """A master subprocess with its own data directory."""

    def __init__(self, data_dir: str, slots: int = 2, port: Optional[int] = None):
        self.data_dir = data_dir
        self.slots = slots
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen] = None

    def start(self, timeout: float = 30.0) -> "MasterProcess":
        log = open(os.path.join(self.data_dir, "master-test.log"), "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "determined.master", "--port", str(self.port),
             "--data-dir", self.data_dir, "--slots", str(self.slots)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(self.url + "/api/v1/master", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("master did not start:\n" + self.log())

    def log(self) -> str:
        with open(os.path.join(self.data_dir, "master-test.log"), errors="replace") as f:
            return f.read()[-4000:]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def sigkill(self) -> None:
        """SIGKILL the master alone (its trial processes are in sessions of their own)."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url + "/api/v1", timeout=60)


def wait_for_state(client: httpx.Client, exp_id: int, states: List[str],
                   timeout: float = 60.0) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        exp = client.get(f"/experiments/{exp_id}").json()
        if exp["state"] in states:
            return exp
        assert time.monotonic() < deadline, f"experiment {exp_id} stuck in {exp['state']}: {exp}"
        time.sleep(0.2)




def _assigned(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "det-trial"
    except OSError:
        return False


def trial_processes(master_pid: int) -> List[int]:
    """Pids of the trial runners the master started."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == master_pid and b"determined.harness._rest_host" in cmd:
            if b"--pooled" in cmd and not _assigned(name):
                continue  # an idle process of the warm pool, not a trial
            pids.append(int(name))
    return pids


def wait_until(predicate: Any, timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


LONG_CONFIG = {
    "entrypoint": "model_def:TinyTrial",
    "scheduling_unit": 20,
    "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 2000}},
    "min_validation_period": {"batches": 1000},
    "max_restarts": 2,
}
