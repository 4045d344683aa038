"""Helpers for tests against a real master (``python -m determined.master``) on a free loopback port."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

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

    def command(self) -> List[str]:
        """The master's command line."""
        return [sys.executable, "-m", "determined.master", "--port", str(self.port),
                "--data-dir", self.data_dir, "--slots", str(self.slots)]

    def start(self, timeout: float = 120.0) -> "MasterProcess":
        """Start it and wait until it answers (a loaded machine starts it slowly)."""
        log = open(os.path.join(self.data_dir, "master-test.log"), "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(self.url + "/api/v1/master", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()  # no fixture will: it never got the master
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
                   timeout: float = 180.0) -> Dict[str, Any]:
    """Poll until the experiment is in one of ``states`` (generous by default: trials
    start slowly on a loaded machine); its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        exp = client.get(f"/experiments/{exp_id}").json()
        if exp["state"] in states:
            return exp
        assert time.monotonic() < deadline, f"experiment {exp_id} stuck in {exp['state']}: {exp}"
        time.sleep(0.2)




def trial_processes(master_pid: int) -> List[int]:
    """Pids of the trial runners the master started (forked by its zygote)."""
    parents: Dict[int, int] = {}
    comms: Dict[int, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/comm") as f:
                comms[int(name)] = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
    return sorted(pid for pid, comm in comms.items()
                  if comm == "det-trial" and parents.get(parents.get(pid, -1), -1) == master_pid)


def wait_until(predicate: Any, timeout: float = 120.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something true (returned); fails after
    ``timeout`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def free_ray_agent_ports() -> Dict[str, int]:
    """Free ports for a Ray node's agents (their defaults are fixed: another Ray node on
    this machine would hold them), as ``ray.init``/``add_node`` keyword arguments."""
    import socket

    out = {}
    for name in ("metrics_agent_port", "metrics_export_port", "runtime_env_agent_port",
                 "dashboard_agent_listen_port"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            out[name] = s.getsockname()[1]
    return out


class PtyReader:
    """Collects what a shell task's websocket sends; :meth:`until` waits for a text."""

    def __init__(self, ws: Any):
        self.ws = ws
        self.output = b""

    def until(self, needle: bytes, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.output:
            assert time.monotonic() < deadline, self.output.decode(errors="replace")
            try:
                self.output += self.ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                pass


LONG_CONFIG = {
    "entrypoint": "model_def:TinyTrial",
    "scheduling_unit": 20,
    "hyperparameters": {"global_batch_size": 16, "lr": 0.1, "dropout": 0.2},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 2000}},
    "min_validation_period": {"batches": 1000},
    "max_restarts": 2,
}


class ConfiguredMasterProcess(MasterProcess):
    """A master started from a master config file (``--config``), e.g. with ``db`` set to
    a PostgreSQL URL or ``resource_manager.scheduler.type: priority``."""

    def __init__(self, data_dir: str, config: Dict[str, Any], port: Optional[int] = None):
        rm = config.get("resource_manager") or {}
        super().__init__(data_dir, int(rm.get("slots", 2)), port)
        self.config = dict(config, data_dir=data_dir, port=self.port)
        self.config_path = os.path.join(data_dir, "master.yaml")

    def command(self) -> List[str]:
        import yaml

        with open(self.config_path, "w") as f:
            yaml.safe_dump(self.config, f)
        return [sys.executable, "-m", "determined.master", "--config", self.config_path]


SLOW_TRIAL = '''"""TinyTrial sleeping ``sleep`` seconds per batch, so a test can act mid-training;
with ``hold_after`` and ``hold_file`` a trial process that trained ``hold_after`` batches
waits for that file to exist before the next (a test acts before the trial ends)."""
import os
import time

from model_def import TinyTrial


class SlowTrial(TinyTrial):
    def train_batch(self, batch, epoch_idx, batch_idx):
        hparams = self.context.get_hparams()
        time.sleep(hparams.get("sleep", 0.0))
        self.trained = getattr(self, "trained", 0) + 1
        if "hold_file" in hparams and self.trained > hparams["hold_after"]:
            while not os.path.exists(hparams["hold_file"]):
                time.sleep(0.05)
        return super().train_batch(batch, epoch_idx, batch_idx)
'''


def slow_model_dir(tiny_dir: Any, dest: Any) -> str:
    """A copy of tests/fixtures/tiny_pytorch plus ``slow_def:SlowTrial``; returns its path."""
    import shutil

    path = os.path.join(str(dest), "slow_model")
    shutil.copytree(str(tiny_dir), path, ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(path, "slow_def.py"), "w") as f:
        f.write(SLOW_TRIAL)
    return path


def create_experiment(client: httpx.Client, config: Dict[str, Any], model_dir: Any,
                      activate: bool = True) -> int:
    """POST /experiments with ``model_dir`` packed as the model definition; the new id."""
    import base64

    from determined.common.api import pack_context

    body = {"config": config, "activate": activate,
            "model_def": base64.b64encode(pack_context(str(model_dir))).decode()}
    r = client.post("/experiments", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def trial_pid(data_dir: str, exp_id: int, trial_id: int) -> Optional[int]:
    """The pid of the runner the master started last for a trial (its pid file)."""
    path = os.path.join(data_dir, "experiments", str(exp_id), "trials", str(trial_id), "pid")
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def slot_tasks(client: httpx.Client) -> List[Optional[str]]:
    """The task ("trial-<id>" or None) on each slot of every agent."""
    agents = client.get("/agents").json()["agents"]
    return [s["task"] for a in agents for s in a["slot_tasks"]]


def metric_rows(client: httpx.Client, trial_id: int) -> List[Any]:
    """A trial's stored metric rows as (kind, total_batches, metrics) in stored order."""
    metrics = client.get(f"/trials/{trial_id}").json()["metrics"]
    return [(m["kind"], m["total_batches"], m["metrics"]) for m in metrics]


def trial_logs(client: httpx.Client, trial_id: int) -> str:
    """A trial's log lines (``GET /trials/{id}/logs`` on an ``/api/v1`` client), joined."""
    rows = client.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(row["line"] for row in rows)


def assert_trial_log_format(logs: str, ranks: Any = (0, 1)) -> None:
    """Every logged line of a trial's ``logs`` reads ``12:04:31 INFO [rank N] message``
    (``ranks`` each wrote some), as in a local run (``harness._rank_logs``): not
    ``2026-11-29 06:40:36,123 INFO ...`` nor with a launcher's ``[rank N]`` before it."""
    logged = [line for line in logs.splitlines() if re.search(r"\b(INFO|WARNING|ERROR)\b", line)]
    for rank in ranks:
        assert [line for line in logged
                if re.match(rf"\d\d:\d\d:\d\d INFO \[rank {rank}\] \S", line)], logs
    assert all(re.match(r"\d\d:\d\d:\d\d (INFO|WARNING|ERROR) \S", line)
               for line in logged), logs


ADMIN_PASSWORD = "admin-test-pw"


def set_password(master: "MasterProcess", user: str = "admin",
                 password: str = ADMIN_PASSWORD) -> str:
    """Set ``user``'s password with the master's own ``--set-password`` (admins cannot
    log in with a blank one where anonymous access is off); returns the password."""
    cmd = master.command() + ["--set-password", user]
    out = subprocess.run(cmd, input=password + "\n", capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return password
