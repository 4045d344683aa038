"""Tasks on remote agents: a master without slots (``slots: 0``) and real agent processes
(``python -m determined.agent``) running commands, shells and TensorBoards; the master's
proxy reaches their services on the agent's address."""

import base64
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import httpx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from determined.common.api import pack_context  # noqa: E402

from agent_testing import AgentCluster  # noqa: E402
from det_cli_testing import run_det  # noqa: E402
from master_testing import (  # noqa: E402
    PtyReader,
    create_experiment,
    wait_for_state,
    wait_until,
)

pytestmark = pytest.mark.e2e

AGENT_TIMEOUT = 10.0  # seconds without a poll: lost (a loaded machine stalls for seconds)


class Cluster(AgentCluster):
    def __init__(self, root: pathlib.Path):
        super().__init__(root, {
            "resource_manager": {"slots": 0, "agent_timeout": AGENT_TIMEOUT}})
        token = httpx.post(self.master.url + "/api/v1/auth/login",
                           json={"username": "determined", "password": ""}).json()["token"]
        self.token = token
        self.api = httpx.Client(base_url=self.master.url,
                                headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def create(self, kind: str, **body) -> dict:
        r = self.api.post("/api/v1/tasks", json={"kind": kind, **body})
        assert r.status_code == 201, r.text
        return r.json()

    def task(self, task_id: str) -> dict:
        return self.api.get(f"/api/v1/tasks/{task_id}").json()

    def wait(self, task_id: str, state: str, timeout: float = 60) -> dict:
        return wait_until(lambda: (lambda t: t if t["state"] == state else None)(
            self.task(task_id)), timeout, f"task {task_id} {state}")

    def lines(self, task_id: str) -> list:
        return [row["line"] for row in self.api.get(f"/api/v1/tasks/{task_id}/logs",
                                                    params={"limit": 10000}).json()["logs"]]

    def close(self) -> None:
        super().close()
        self.api.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(tmp_path_factory.mktemp("remote-tasks")) as c:
        c.agent("tasks-a")
        yield c


@pytest.fixture(autouse=True)
def _nothing_left_running(cluster):
    """After each test its tasks and experiments are killed (a failed test's included), so
    none holds the agent's slot that the next test waits for."""
    yield
    for task in cluster.api.get("/api/v1/tasks").json()["tasks"]:
        if task["state"] != "TERMINATED":
            cluster.api.post(f"/api/v1/tasks/{task['id']}/kill")
    for exp in cluster.api.get("/api/v1/experiments").json()["experiments"]:
        if exp["state"] in ("ACTIVE", "PAUSED"):
            cluster.api.post(f"/api/v1/experiments/{exp['id']}/kill")


def _pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_command_runs_on_the_agent_and_frees_its_slot(cluster, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("hello from the context\n")
    done = cluster.create("command", context=base64.b64encode(pack_context(str(ctx))).decode(),
                          config={"entrypoint": "cat data.txt; echo cwd=$(pwd); exit 3"})
    ended = cluster.wait(done["id"], "TERMINATED")
    assert ended["exit_code"] == 3 and ended["agent_id"] == "tasks-a", ended
    assert ended["slot_ids"] == [0]
    lines = cluster.lines(done["id"])
    assert "hello from the context" in lines, lines
    work = str(cluster.agents["tasks-a"].work_dir / "tasks" / done["id"] / "work")
    assert f"cwd={work}" in lines, lines
    # The agent removes the task's directory once it ended.
    wait_until(lambda: not os.path.exists(work), 30, "the task's directory to be removed")

    # The agent's only slot: a second command waits until the first is killed.
    first = cluster.create("command", config={"entrypoint": "echo $$ > pid; exec sleep 600"})
    cluster.wait(first["id"], "RUNNING")
    pid_file = cluster.agents["tasks-a"].work_dir / "tasks" / first["id"] / "work" / "pid"
    pid = int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 30,
                         "the command's pid"))
    slots = json.loads(run_det(["-m", cluster.master.url, "slot", "list", "--json"]).stdout)
    assert [(s["agent_id"], s["task"]) for s in slots] == [("tasks-a", f"task-{first['id']}")]
    second = cluster.create("command", config={"entrypoint": "echo second"})
    time.sleep(1.5)
    assert cluster.task(second["id"])["state"] == "PENDING"
    listed = run_det(["-m", cluster.master.url, "task", "list", "--csv"]).stdout
    assert f"{first['id']},command,determined,RUNNING" in listed
    assert "tasks-a" in listed
    assert cluster.api.post(f"/api/v1/tasks/{first['id']}/kill").status_code == 200
    killed = cluster.wait(first["id"], "TERMINATED")
    assert killed["end_reason"] == "killed" and killed["exit_code"] == -15, killed
    assert _pid_gone(pid)
    assert cluster.wait(second["id"], "TERMINATED")["exit_code"] == 0
    assert "second" in cluster.lines(second["id"])


def test_command_leaving_a_child_that_holds_its_output_ends_with_its_own_exit(cluster):
    """The background ``sleep`` keeps the command's stdout open for 10 minutes; the
    task still ends when the command exits, and the child goes with it."""
    cmd = cluster.create("command", config={
        "entrypoint": "sleep 600 & echo child=$!; echo started; exit 4"})
    ended = cluster.wait(cmd["id"], "TERMINATED", timeout=60)
    assert ended["exit_code"] == 4, ended
    lines = cluster.lines(cmd["id"])
    assert "started" in lines, lines
    child = int(next(ln for ln in lines if ln.startswith("child="))[len("child="):])
    wait_until(lambda: _pid_gone(child), 60, "the child to end")


def test_shell_on_the_agent_through_the_proxy(cluster):
    from websockets.sync.client import connect

    sh = cluster.create("shell")
    cluster.wait(sh["id"], "RUNNING")
    # The window's size as `det shell open` sends it: the PTY has it before the shell starts.
    url = cluster.master.url.replace("http://", "ws://") + f"/proxy/{sh['id']}/?rows=31&cols=97"

    def connected():
        try:
            return connect(url, additional_headers={"Authorization": f"Bearer {cluster.token}"},
                           open_timeout=10)
        except Exception:
            return None

    ws = wait_until(connected, 60, "the shell server on the agent")
    reader = PtyReader(ws)

    ws.send(b"stty size; echo agent=$DET_AGENT_ID; echo MARK$((6*7))\n")
    reader.until(b"MARK42")
    assert b"31 97" in reader.output and b"agent=tasks-a" in reader.output
    ws.send(json.dumps({"resize": [40, 120]}))  # the window changes size
    ws.send(b"stty size; echo MARK$((6*8))\n")
    reader.until(b"MARK48")
    assert b"40 120" in reader.output
    # A foreground job that says when it runs (a fixed pause raced the shell's fork on a
    # loaded machine: a Ctrl-C before it reached the shell, and `sleep` held the prompt).
    ws.send(b"sh -c 'echo RUNNING$((40+2)); exec sleep 300'\n")
    reader.until(b"RUNNING42")
    ws.send(b"\x03")  # Ctrl-C stops the foreground job, not the shell
    ws.send(b"echo AFTER$((1+1))\n")
    reader.until(b"AFTER2")
    ws.close()
    # The service on the agent's address takes no connection without the task's token.
    agents = cluster.api.get("/api/v1/agents").json()["agents"]
    assert [a["id"] for a in agents] == ["tasks-a"]
    logs = cluster.lines(sh["id"])
    assert any("started shell task" in line for line in logs), logs
    port = _listening_port(sh["id"], cluster)
    with pytest.raises(Exception, match="403"):
        connect(f"ws://127.0.0.1:{port}/proxy/{sh['id']}/", open_timeout=10)
    cluster.api.post(f"/api/v1/tasks/{sh['id']}/kill")
    assert cluster.wait(sh["id"], "TERMINATED")["agent_id"] == "tasks-a"
    assert cluster.api.get(f"/proxy/{sh['id']}/").status_code == 404


def _listening_port(task_id: str, cluster: Cluster) -> int:
    """The port the task's service listens on (from the shell server's log line, which
    the agent ships to the master in its own time: waited for)."""
    def port():
        for line in cluster.lines(task_id):
            if "shell server listening on" in line:
                return int(line.rsplit(":", 1)[1])
        return None

    return wait_until(port, 60, f"task {task_id}'s 'shell server listening on' log line")


def test_tensorboard_on_the_agent_through_the_proxy(cluster, tiny_dir):
    config = {
        "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "lr": 0.1},
        "searcher": {"name": "single", "metric": "validation_loss",
                     "max_length": {"batches": 20}},
        "min_validation_period": {"batches": 20},
    }
    api = httpx.Client(base_url=cluster.master.url + "/api/v1", timeout=60)
    exp_id = create_experiment(api, config, tiny_dir)
    wait_for_state(api, exp_id, ["COMPLETED"], timeout=240)
    tb = cluster.create("tensorboard", experiment_ids=[exp_id])
    assert tb["slots"] == 0
    runs_url = f"/proxy/{tb['id']}/data/runs"

    def runs():
        r = cluster.api.get(runs_url)
        return r.json() if r.status_code == 200 and r.json() else None

    names = wait_until(runs, 180, "TensorBoard runs")
    assert len(names) == 1 and names[0].startswith("trial_"), names
    assert cluster.task(tb["id"])["agent_id"] == "tasks-a"
    assert httpx.get(cluster.master.url + runs_url).status_code == 401
    # On the agent's address it answers only requests with the task's token (the proxy's).
    # (Its log lines reach the master in batches: the address line may come later.)
    served = wait_until(lambda: [line for line in cluster.lines(tb["id"])
                                 if "http://127.0.0.1:" in line], 60,
                        "TensorBoard's address in its logs")
    direct = served[0].split("http://", 1)[1].split("/", 1)[0]
    assert httpx.get(f"http://{direct}{runs_url}").status_code == 403
    cluster.api.post(f"/api/v1/tasks/{tb['id']}/kill")
    cluster.wait(tb["id"], "TERMINATED")


def test_notebook_on_the_agent_through_the_proxy_with_auth_only(cluster, tmp_path):
    pytest.importorskip("jupyterlab", reason="the optional extra 'notebook'")
    ctx = tmp_path / "nb"
    ctx.mkdir()
    (ctx / "analysis.py").write_text("x = 1\n")
    nb = cluster.create("notebook", context=base64.b64encode(pack_context(str(ctx))).decode())
    base = f"/proxy/{nb['id']}"

    def status():
        r = cluster.api.get(f"{base}/api/status")
        return r.json() if r.status_code == 200 else None

    assert "started" in wait_until(status, 120, "JupyterLab on the agent")
    assert cluster.task(nb["id"])["agent_id"] == "tasks-a"
    contents = cluster.api.get(f"{base}/api/contents").json()
    assert [f["name"] for f in contents["content"]] == ["analysis.py"]
    assert httpx.get(cluster.master.url + f"{base}/api/status").status_code == 401
    cluster.api.post(f"/api/v1/tasks/{nb['id']}/kill")
    cluster.wait(nb["id"], "TERMINATED")


def test_task_of_a_lost_agent_is_marked_and_its_slot_freed(cluster):
    doomed = cluster.agent("tasks-doomed", label="doomed")
    cmd = cluster.create("command", config={
        "entrypoint": "echo $$ > pid; exec sleep 600",
        "resources": {"agent_label": "doomed"}})
    running = cluster.wait(cmd["id"], "RUNNING")
    assert running["agent_id"] == "tasks-doomed"
    pid_file = doomed.work_dir / "tasks" / cmd["id"] / "work" / "pid"
    pid = int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 30,
                         "the command's pid"))
    doomed.proc.send_signal(signal.SIGKILL)  # the agent alone, not its session
    doomed.proc.wait()
    ended = cluster.wait(cmd["id"], "TERMINATED", timeout=AGENT_TIMEOUT + 30)
    assert "agent tasks-doomed lost" in ended["end_reason"], ended
    assert ended["exit_code"] is None
    assert any("agent tasks-doomed lost" in line for line in cluster.lines(cmd["id"]))
    wait_until(lambda: _pid_gone(pid), 60, "the task's process to die with its agent")
    listed = run_det(["-m", cluster.master.url, "task", "list", "--csv"]).stdout
    assert any(row.startswith(f"{cmd['id']},") and "agent tasks-doomed lost" in row
               for row in listed.splitlines()), listed
    # Its slot is free: the agent's id returns and a task with that label runs there.
    cluster.agent("tasks-doomed", label="doomed")
    again = cluster.create("command", config={"entrypoint": "echo back",
                                              "resources": {"agent_label": "doomed"}})
    assert cluster.wait(again["id"], "TERMINATED")["exit_code"] == 0


def test_a_restarted_master_ends_the_tasks_agents_still_run(cluster):
    cmd = cluster.create("command", config={"entrypoint": "echo $$ > pid; exec sleep 600"})
    running = cluster.wait(cmd["id"], "RUNNING")
    agent = cluster.agents[running["agent_id"]]
    pid_file = agent.work_dir / "tasks" / cmd["id"] / "work" / "pid"
    pid = int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 30,
                         "the command's pid"))
    cluster.restart_master()
    ended = cluster.wait(cmd["id"], "TERMINATED", timeout=30)
    assert ended["end_reason"] == "the master restarted", ended
    # The agent registers again naming the task; the new master has it killed.
    wait_until(lambda: _pid_gone(pid), 60, "the task's process to be killed")
    again = cluster.create("command", config={"entrypoint": "echo fine"})
    assert cluster.wait(again["id"], "TERMINATED")["exit_code"] == 0


def test_an_agent_refuses_a_wildcard_service_address(cluster):
    out = subprocess.run([sys.executable, "-m", "determined.agent", "--master", cluster.master.url,
                          "--address", "0.0.0.0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--address" in out.stderr and "wildcard" in out.stderr, out.stderr


def test_an_agent_shutting_down_ends_its_tasks_with_that_reason(cluster):
    leaving = cluster.agent("tasks-leaving", label="leaving")
    cmd = cluster.create("command", config={"entrypoint": "exec sleep 600",
                                            "resources": {"agent_label": "leaving"}})
    assert cluster.wait(cmd["id"], "RUNNING")["agent_id"] == "tasks-leaving"
    leaving.stop()  # SIGTERM: the agent kills its tasks, reports, deregisters
    ended = cluster.wait(cmd["id"], "TERMINATED", timeout=30)
    assert ended["end_reason"] == "agent tasks-leaving shut down", ended
    assert ended["exit_code"] == -9, ended
    assert any("shutting down; killing task" in line for line in cluster.lines(cmd["id"]))
