"""Run by test_spanning_netns.py inside ``unshare --net``: a master in this network
namespace behind a bridge (10.77.0.1) and two one-slot agents, each in a network
namespace of its own (10.77.0.2, 10.77.0.3, joined by veth pairs to the bridge), so
the agents reach the master and each other only over those links. A two-slot trial
spans them; exits 0 when it completed with its ranks' rendezvous at an agent's
bridge address (prints what happened either way). With ``script``, the trial is a Core
API script under ``determined.launch.torch_distributed`` (one machine each), which must
also have been told both agents' addresses, the chief's first.

Usage: python netns_cluster.py WORK_DIR [script]
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import yaml

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "master"))

from agent_testing import trial_logs  # noqa: E402
from master_testing import (  # noqa: E402
    ConfiguredMasterProcess,
    create_experiment,
    wait_for_state,
    wait_until,
)

BRIDGE = "10.77.0.1"
DIST_MODEL = HERE.parent / "fixtures" / "dist_pytorch"
CORE_DIR = HERE.parent / "fixtures" / "core_api"


def _script_config(markers: pathlib.Path) -> dict:
    return {"name": "script-across-namespaces",
            "entrypoint": "python3 -m determined.launch.torch_distributed python3 span_core.py",
            "hyperparameters": {"marker_dir": str(markers), "ckpt_every": 2},
            "searcher": {"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 4}},
            "resources": {"slots_per_trial": 2}, "max_restarts": 0}


def _script_ranks_ok(markers: pathlib.Path, chief_ip: str) -> bool:
    """Each rank was told both machines, the chief's address first, and its own place."""
    ranks = [json.loads((markers / f"rank{r}.json").read_text()) for r in (0, 1)]
    print("ranks:", ranks)
    return all(sorted(i["container_addrs"]) == ["10.77.0.2", "10.77.0.3"]
               and i["container_addrs"][0] == chief_ip and i["container_rank"] == i["rank"]
               and i["cross_size"] == 2 for i in ranks)


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True)


def _wait_for_own_namespace(proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until ``proc`` (``unshare --net ...``) is in a network namespace other than ours: a
    veth end moved to its pid before that would land in ours."""
    ours = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"unshare exited with {proc.returncode}"
        try:
            if os.readlink(f"/proc/{proc.pid}/ns/net") != ours:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"pid {proc.pid} made no network namespace"
        time.sleep(0.02)


class NamespacedAgent:
    """``python -m determined.agent`` in a network namespace of its own, linked to the
    bridge by a veth pair; it starts once the link is configured."""

    def __init__(self, index: int, master_url: str, root: pathlib.Path):
        self.id = f"ns{index}"
        self.address = f"10.77.0.{index + 1}"
        self.ready = root / f"{self.id}.ready"
        self.log = root / f"{self.id}.log"
        script = (f"while [ ! -e {self.ready} ]; do sleep 0.05; done; exec {sys.executable} "
                  f"-m determined.agent --master {master_url} --slots 1 --id {self.id} "
                  f"--work-dir {root / self.id}")
        self.proc = subprocess.Popen(["unshare", "--net", "sh", "-c", script],
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        try:
            self._link(index)
        except BaseException:
            self.stop()  # it would wait for its link forever
            raise

    def _link(self, index: int) -> None:
        pid = str(self.proc.pid)
        _wait_for_own_namespace(self.proc)
        host_end = f"vh{index}"
        sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", pid)
        sh("ip", "link", "set", host_end, "master", "br0", "up")
        for args in (("addr", "add", f"{self.address}/24", "dev", "eth0"),
                     ("link", "set", "eth0", "up"), ("link", "set", "lo", "up")):
            sh("nsenter", "-t", pid, "-n", "ip", *args)
        self.ready.touch()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main(root: pathlib.Path, script: bool = False) -> int:
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "link", "add", "br0", "type", "bridge")
    sh("ip", "addr", "add", f"{BRIDGE}/24", "dev", "br0")
    sh("ip", "link", "set", "br0", "up")
    (root / "master").mkdir()
    master = ConfiguredMasterProcess(str(root / "master"), {
        "host": "0.0.0.0", "resource_manager": {"slots": 0, "agent_timeout": 10}})
    master.start(timeout=120)
    agents = []
    try:
        agents = [NamespacedAgent(i, f"http://{BRIDGE}:{master.port}", root) for i in (1, 2)]
        with master.client() as api:
            wait_until(lambda: {a["id"] for a in api.get("/agents").json()["agents"]} == {
                "ns1", "ns2"}, timeout=120, what="both agents")
            markers = root / "markers"
            markers.mkdir()
            if script:
                exp_id = create_experiment(api, _script_config(markers), CORE_DIR)
            else:
                config = yaml.safe_load((DIST_MODEL / "const.yaml").read_text())
                config["max_restarts"] = 0
                exp_id = create_experiment(api, config, DIST_MODEL)
            exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
            trial_id = exp["trials"][0]["id"]
            logs = trial_logs(api, trial_id)
            addresses = [a["address"] for a in api.get("/agents").json()["agents"]]
        print(logs)
        print("agent addresses seen by the master:", addresses)
        met = re.findall(rf"det-agent (ns\d): ranks of trial {trial_id} rendezvous at "
                         r"([\d.]+):\d+", logs)
        ok = (exp["state"] == "COMPLETED" and sorted(a for a, _ in met) == ["ns1", "ns2"]
              and len({ip for _, ip in met}) == 1 and met[0][1] in ("10.77.0.2", "10.77.0.3")
              and sorted(addresses) == ["10.77.0.2", "10.77.0.3"])
        ok = ok and (not script or _script_ranks_ok(markers, met[0][1]))
        print("RESULT", "ok" if ok else "FAILED", exp["state"])
        return 0 if ok else 1
    finally:
        for agent in agents:
            agent.stop()
        master.stop()
        for agent in agents:
            print(f"--- {agent.id} log\n" + agent.log.read_text(errors="replace")[-3000:])


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(f"signal {signum}")  # main's finally stops the agents and the master


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main(pathlib.Path(sys.argv[1]), sys.argv[2:] == ["script"]))
