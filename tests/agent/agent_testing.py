"""Helpers for tests with real agent processes (``python -m determined.agent``) on this
machine and a master without slots of its own (``slots: 0``)."""

import os
import pathlib
import signal
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

import httpx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from master_testing import ConfiguredMasterProcess, trial_logs, wait_until  # noqa: E402,F401


class AgentProcess:
    """``python -m determined.agent`` in a session of its own, its output in a file."""

    def __init__(self, master_url: str, agent_id: str, root: pathlib.Path,
                 slots: Optional[int] = 1, token: Optional[str] = None, label: str = "",
                 extra_args: Sequence[str] = (), env: Optional[Dict[str, str]] = None):
        self.id = agent_id
        self.work_dir = root / agent_id
        self.log_path = root / f"{agent_id}.log"
        self.cmd = [sys.executable, "-m", "determined.agent", "--master", master_url,
                    "--id", agent_id, "--work-dir", str(self.work_dir), *extra_args]
        if slots is not None:  # None: the agent's default (one per GPU, else per CPU)
            self.cmd += ["--slots", str(slots)]
        self.env = env  # None: this process's environment
        if token is not None:
            self.cmd += ["--token", token]
        if label:
            self.cmd += ["--label", label]
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "AgentProcess":
        self.proc = subprocess.Popen(self.cmd, stdout=open(self.log_path, "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=self.env)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> Optional[int]:
        """SIGTERM, then SIGKILL to its session after 30 s; its exit status."""
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait() if self.proc is not None else None


class AgentCluster:
    """A master started from ``master_config`` in ``root/master`` and the agents started for
    it (each with the master's ``security.agent_token``, if it has one). Use it in a
    ``with`` block: leaving it stops the agents, then the master."""

    def __init__(self, root: pathlib.Path, master_config: Dict[str, Any]):
        self.root = root
        data_dir = root / "master"
        data_dir.mkdir()
        self.master = ConfiguredMasterProcess(str(data_dir), master_config).start(timeout=120)
        self.agent_token: Optional[str] = (master_config.get("security") or {}).get(
            "agent_token")
        self.agents: Dict[str, AgentProcess] = {}

    def ensure_agents(self, *ids: str, **options: Any) -> None:
        """Starts each agent of ``ids`` not running (``options``: :class:`AgentProcess`'s
        ``slots``, ``label``, ``extra_args`` or ``env``) and waits until all are registered."""
        for agent_id in ids:
            if agent_id not in self.agents or not self.agents[agent_id].alive():
                self.agents[agent_id] = AgentProcess(self.master.url, agent_id, self.root,
                                                     token=self.agent_token, **options).start()
        wait_until(lambda: set(ids) <= set(self.agent_ids()), timeout=120,
                   what=f"agents {ids} to register")  # a loaded machine starts them slowly

    def agent(self, agent_id: str, **options: Any) -> AgentProcess:
        """:meth:`ensure_agents` for one agent; that agent."""
        self.ensure_agents(agent_id, **options)
        return self.agents[agent_id]

    def agent_ids(self) -> List[str]:
        agents = httpx.get(self.master.url + "/api/v1/agents", timeout=60).json()["agents"]
        return [a["id"] for a in agents]

    def restart_master(self) -> None:
        """SIGKILL the master and start a new one on the same port and data."""
        old = self.master
        old.sigkill()
        self.master = ConfiguredMasterProcess(old.data_dir, old.config,
                                              port=old.port).start(timeout=120)

    def close(self) -> None:
        for agent in self.agents.values():
            agent.stop()
        self.master.stop()

    def __enter__(self) -> "AgentCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
