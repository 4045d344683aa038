"""A master subprocess for the cluster benchmarks (own data dir, free loopback port)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

import httpx

HERE = os.path.dirname(os.path.abspath(__file__))
NOOP_DIR = os.path.join(HERE, "noop")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def thread_cpu(pid: int) -> Dict[str, float]:
    """CPU seconds of each thread of ``pid``, summed by thread name (see _profile.py)."""
    by_name: Dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        name = name.rstrip("0123456789_").rstrip("-_ ") or name
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        by_name[name] = by_name.get(name, 0.0) + cpu
    return by_name


class BenchMaster:
    def __init__(self, data_dir: str, slots: int, extra_args: Optional[List[str]] = None):
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.slots = slots
        self.extra_args = extra_args or []
        self.proc: Optional[subprocess.Popen] = None
        self.api = httpx.Client(base_url=self.url + "/api/v1", timeout=60)

    def __enter__(self) -> "BenchMaster":
        log = open(os.path.join(self.data_dir, "master.log"), "ab")
        # DET_BENCH_PROFILE=out.prof: the master runs under cProfile (_profile.py).
        profile = os.environ.get("DET_BENCH_PROFILE")
        wrapper = [os.path.join(HERE, "_profile.py"), profile] if profile else []
        self.proc = subprocess.Popen(
            [sys.executable, *wrapper, "-m", "determined.master", "--port", str(self.port),
             "--data-dir", self.data_dir, "--slots", str(self.slots), *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("master exited; see " + os.path.join(self.data_dir, "master.log"))
            try:
                if self.api.get("/master").status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("master did not start")

    def __exit__(self, *exc: Any) -> None:
        self.api.close()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                # A profiled master writes its statistics first.
                self.proc.wait(300 if os.environ.get("DET_BENCH_PROFILE") else 20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def profile_from_here(self) -> None:
        """With DET_BENCH_PROFILE: drop what the profile collected so far (start-up)."""
        if os.environ.get("DET_BENCH_PROFILE", "threads") != "threads" and self.proc is not None:
            os.kill(self.proc.pid, signal.SIGUSR1)

    def det(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, DET_MASTER=self.url)
        out = subprocess.run([sys.executable, "-m", "determined.cli", *args], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"det {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
        return out

    def wait_done(self, exp_id: int, poll: float = 0.05, timeout: float = 3600) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            exp = self.api.get(f"/experiments/{exp_id}").json()
            if exp["state"] in ("COMPLETED", "CANCELED", "ERROR"):
                return exp
            time.sleep(poll)
        raise RuntimeError(f"experiment {exp_id} did not finish in {timeout} s")

    def warm_up(self, config_path: str) -> int:
        """Run one experiment to completion so the agent's zygote (the pre-imported
        process trials are forked from) is up before anything is measured."""
        out = self.det("experiment", "create", config_path, NOOP_DIR)
        exp_id = int(out.stdout.split("Created experiment")[1].split()[0])
        if self.wait_done(exp_id)["state"] != "COMPLETED":
            raise RuntimeError("the warm-up experiment failed")
        return exp_id


def warm_master(tmp: str, slots: int = 1) -> BenchMaster:
    """A started master (data under ``tmp/master``) whose agent ran one no-op experiment
    (``noop/const.yaml``); leave it with ``__exit__``."""
    import yaml

    data_dir = os.path.join(tmp, "master")
    os.makedirs(data_dir)
    master = BenchMaster(data_dir, slots).__enter__()
    warm = os.path.join(tmp, "warm.yaml")
    with open(os.path.join(NOOP_DIR, "const.yaml")) as src, open(warm, "w") as dst:
        yaml.safe_dump(yaml.safe_load(src), dst)
    try:
        master.warm_up(warm)
    except BaseException:
        master.__exit__(None, None, None)
        raise
    return master
