"""Tasks on a real master: commands, TensorBoards, notebooks and shells behind the proxy."""

import base64
import json
import os
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

from determined.common.api import pack_context

from det_cli_testing import run_det
from master_testing import (
    ConfiguredMasterProcess,
    PtyReader,
    create_experiment,
    wait_for_state,
    wait_until,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def master(tmp_path):
    m = ConfiguredMasterProcess(str(tmp_path / "master"), {
        # An idle TensorBoard is reaped after 30 s: longer than the test's pauses between
        # its requests (a `det` command or two) on a loaded machine.
        "resource_manager": {"slots": 1}, "tensorboard_timeout": 30})
    os.makedirs(m.data_dir, exist_ok=True)
    m.start(timeout=120)  # a loaded CI machine starts it slowly
    yield m
    m.stop()


def login(m) -> httpx.Client:
    token = httpx.post(m.url + "/api/v1/auth/login",
                       json={"username": "determined", "password": ""}).json()["token"]
    return httpx.Client(base_url=m.url, headers={"Authorization": f"Bearer {token}"},
                        timeout=60)


def create_task(c: httpx.Client, kind: str, **body) -> dict:
    r = c.post("/api/v1/tasks", json={"kind": kind, **body})
    assert r.status_code == 201, r.text
    return r.json()


def task(c: httpx.Client, task_id: str) -> dict:
    return c.get(f"/api/v1/tasks/{task_id}").json()


def wait_task(c: httpx.Client, task_id: str, state: str, timeout: float = 60) -> dict:
    return wait_until(lambda: (lambda t: t if t["state"] == state else None)(task(c, task_id)),
                      timeout, f"task {task_id} {state}")


def context_b64(path) -> str:
    return base64.b64encode(pack_context(str(path))).decode()


def test_command_output_exit_code_and_slots(master, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "data.txt").write_text("hello from the context\n")
    c = login(master)
    done = create_task(c, "command", context=context_b64(ctx),
                       config={"entrypoint": "cat data.txt; echo cwd=$(pwd); exit 3"})
    assert done["slots"] == 1 and done["url"] is None
    ended = wait_task(c, done["id"], "TERMINATED")
    assert ended["exit_code"] == 3
    lines = [l["line"] for l in c.get(f"/api/v1/tasks/{done['id']}/logs").json()["logs"]]
    assert "hello from the context" in lines
    assert any(l.startswith("cwd=") and l.endswith("/work") for l in lines)
    assert [l["line"] for l in c.get(f"/api/v1/tasks/{done['id']}/logs?tail=1").json()["logs"]] \
        == [lines[-1]]

    # One slot: a second command waits until the first is killed.
    first = create_task(c, "command", config={"entrypoint": ["sleep", "600"]})
    wait_task(c, first["id"], "RUNNING")
    assert task(c, first["id"])["slot_ids"] == [0]
    second = create_task(c, "command", config={"entrypoint": "echo second"})
    time.sleep(1.5)
    assert task(c, second["id"])["state"] == "PENDING"
    assert c.post(f"/api/v1/tasks/{first['id']}/kill").status_code == 200
    assert wait_task(c, first["id"], "TERMINATED")["end_reason"] == "killed"
    assert wait_task(c, second["id"], "TERMINATED")["exit_code"] == 0

    # Bad input: a 400 naming the field, nothing stored.
    r = c.post("/api/v1/tasks", json={"kind": "command", "config": {"entrypoint": 5}})
    assert r.status_code == 400 and "entrypoint" in r.text
    r = c.post("/api/v1/tasks", json={"kind": "rocket"})
    assert r.status_code == 400 and "kind" in r.text


def test_cli_cmd_run_and_task_list(master, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "prep.py").write_text("print('prepared', 6 * 7)\nraise SystemExit(4)\n")
    env = {"DET_MASTER": master.url}
    out = run_det(["cmd", "run", "-c", ctx, "python", "prep.py"], env=env, timeout=120)
    assert "prepared 42" in out.stdout, out.stdout + out.stderr
    assert out.returncode == 4
    c = login(master)
    assert c.put("/api/v1/templates/small", json={"config": {
        "description": "from the template", "resources": {"slots": 1}}}).status_code == 200
    out = run_det(["cmd", "run", "--template", "small", "--config", "resources.slots=0",
                   "-d", "true"], env=env)
    assert out.returncode == 0, out.stderr
    config = run_det(["cmd", "config", out.stdout.strip()], env=env).stdout
    assert "from the template" in config and "slots: 0" in config
    listing = run_det(["task", "list", "--json"], env=env)
    row = next(r for r in json.loads(listing.stdout) if r["exit_code"] == 4)
    assert row["kind"] == "command" and row["state"] == "TERMINATED"
    assert row["description"] == "python prep.py"  # was empty: the command line says which
    table = run_det(["task", "list"], env=dict(env, COLUMNS="80")).stdout
    assert any(line.startswith(row["id"]) and "| python pre" in line
               for line in table.splitlines()), table
    # At 80 columns the owner stays (it was left out first); slots and agent go.
    header = [h.strip() for h in table.splitlines()[0].split("|")]
    assert header[:5] == ["id", "kind", "owner", "state", "description"], table
    logs = run_det(["cmd", "logs", row["id"], "--tail", "1"], env=env)
    assert logs.stdout.strip().endswith("prepared 42")


def test_cmd_run_separator_and_a_missing_config_file(master, tmp_path):
    """`det cmd run -- CMD` ran the command '--' (the task failed to start); a missing
    --config-file was a FileNotFoundError line."""
    env = {"DET_MASTER": master.url}
    out = run_det(["cmd", "run", "--", "echo", "separated"], env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "separated", out.stdout + out.stderr
    missing = tmp_path / "missing.yaml"
    out = run_det(["cmd", "run", "--config-file", missing, "true"], env=env)
    assert out.returncode == 1
    assert out.stderr.strip() == (f"det: error: Invalid config file {missing} (1 error):\n"
                                  "  - cannot read it: No such file or directory"), \
        out.stderr
    # A missing template is named as `det e create --template` names it (was a bare 404).
    out = run_det(["cmd", "run", "--template", "nope", "true"], env=env)
    assert out.returncode == 1
    assert out.stderr.strip() == ("det: error: --template nope: the master has no template "
                                  "of that name (see `det template list`)"), out.stderr


def test_killing_a_queued_task_ends_it(master):
    """A task waiting for slots: its kill answered a 500 (the master notified a condition
    without holding its lock) and the task stayed queued. (A task larger than this
    embedded-only cluster is refused up front now: it queues behind a busy slot.)"""
    env = {"DET_MASTER": master.url}
    busy = run_det(["cmd", "run", "-d", "sleep 300"], env=env)
    assert busy.returncode == 0, busy.stderr
    out = run_det(["cmd", "run", "--config", f"resources.slots={master.slots}", "-d", "true"],
                  env=env)
    assert out.returncode == 0, out.stderr
    task_id = out.stdout.strip()
    c = login(master)
    assert task(c, task_id)["state"] == "PENDING"
    killed = run_det(["cmd", "kill", task_id], env=env)
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.strip() == f"killed command {task_id}"
    ended = task(c, task_id)
    assert (ended["state"], ended["end_reason"]) == ("TERMINATED", "killed")
    assert "Traceback" not in master.log()
    assert run_det(["cmd", "kill", busy.stdout.strip()], env=env).returncode == 0


def test_kill_of_a_task_that_ignores_sigterm_says_it_is_still_running(master):
    """`det cmd kill` waits DET_KILL_WAIT_SECONDS (here 0: one look) for the task to end;
    one that ignores SIGTERM is still RUNNING then: the CLI says so, naming it, and exits
    0 (0.13's kill did not wait at all); the master SIGKILLs it after its grace."""
    env = {"DET_MASTER": master.url}
    out = run_det(["cmd", "run", "-d", "trap '' TERM; echo ignoring TERM; sleep 600"], env=env)
    assert out.returncode == 0, out.stderr
    task_id = out.stdout.strip()
    c = login(master)
    wait_until(lambda: any(line["line"] == "ignoring TERM"
                           for line in c.get(f"/api/v1/tasks/{task_id}/logs").json()["logs"]),
               120, "the trap set")
    killed = run_det(["cmd", "kill", task_id], env={**env, "DET_KILL_WAIT_SECONDS": "0"})
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout == ""
    assert killed.stderr.strip() == (
        f"det: command {task_id} is being killed but is still RUNNING after 0 s (the master "
        "kills it by force if it ignores the stop); `det task list` shows when it has ended")
    ended = wait_task(c, task_id, "TERMINATED", timeout=60)
    assert ended["end_reason"] == "killed", ended

    bad = run_det(["cmd", "kill", task_id], env={**env, "DET_KILL_WAIT_SECONDS": "soon"})
    assert bad.returncode == 2, bad.stderr
    assert "DET_KILL_WAIT_SECONDS must be a number of seconds, 0 or more. Received: 'soon'" \
        in bad.stderr


def test_tensorboard_of_finished_experiment_through_proxy_and_reaped(master, tmp_path,
                                                                    tiny_dir):
    c = login(master)
    config = {
        "entrypoint": "model_def:TinyTrial", "scheduling_unit": 10,
        "hyperparameters": {"global_batch_size": 16, "dropout": 0.2,
                            "lr": {"type": "categorical", "vals": [0.1, 0.05]}},
        "searcher": {"name": "grid", "metric": "validation_loss",
                     "max_length": {"batches": 20}},
        "min_validation_period": {"batches": 20},
    }
    exp_id = create_experiment(httpx.Client(base_url=master.url + "/api/v1", timeout=60),
                               config, tiny_dir)
    wait_for_state(httpx.Client(base_url=master.url + "/api/v1"), exp_id, ["COMPLETED"],
                   timeout=240)
    trial_ids = sorted(t["id"] for t in c.get(f"/api/v1/experiments/{exp_id}/trials")
                       .json()["trials"])
    tb = create_task(c, "tensorboard", experiment_ids=[exp_id])
    assert tb["slots"] == 0 and tb["url"] == f"/proxy/{tb['id']}/"
    runs_url = f"/proxy/{tb['id']}/data/runs"

    def runs():
        r = c.get(runs_url)
        return r.json() if r.status_code == 200 and len(r.json()) == 2 else None

    try:
        names = wait_until(runs, 180, "TensorBoard runs")
    except AssertionError:  # say why: the task's state, its output and what TB served
        logs = c.get(f"/api/v1/tasks/{tb['id']}/logs", params={"tail": 40}).json()["logs"]
        raise AssertionError(f"no 2 TensorBoard runs: task {task(c, tb['id'])}, last answer "
                             f"{c.get(runs_url).text[:300]!r}, logs:\n" +
                             "\n".join(line["line"] for line in logs)) from None
    assert sorted(int(n.split()[0].split("_")[1]) for n in names) == trial_ids
    assert all("lr=" in n for n in names)
    assert httpx.get(master.url + runs_url).status_code == 401
    bad = httpx.get(master.url + runs_url, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401
    # The scalars of a trial are served (the platform's tags).
    tags = c.get(f"/proxy/{tb['id']}/data/plugin/scalars/tags").json()
    assert "Determined/loss" in tags[names[0]]
    # `det tensorboard open` prints a URL a browser can use (login kept in a cookie).
    env = {"DET_MASTER": master.url}
    out = run_det(["tensorboard", "open", tb["id"], "--no-browser"], env=env)
    url = out.stdout.strip()
    assert url.startswith(f"{master.url}/proxy/{tb['id']}/?det_token="), out.stderr
    browser = httpx.Client(follow_redirects=True, timeout=30)
    assert browser.get(url).status_code == 200
    assert browser.get(master.url + runs_url).json() == names
    listed = json.loads(run_det(["tensorboard", "list", "--json"], env=env).stdout)
    assert [t["id"] for t in listed] == [tb["id"]]
    # Idle for tensorboard_timeout (30 s): reaped.
    ended = wait_task(c, tb["id"], "TERMINATED", timeout=120)
    assert ended["end_reason"].startswith("idle")
    assert c.get(runs_url).status_code == 404


def test_tensorboard_of_an_experiment_without_metrics_is_refused(master, tiny_dir):
    """A TensorBoard of a paused experiment that never trained started and stayed empty
    (runs: []): refused with a 400 naming the experiment and its state; nothing starts."""
    config = {"entrypoint": "model_def:TinyTrial",
              "hyperparameters": {"global_batch_size": 16, "dropout": 0.2, "lr": 0.1},
              "searcher": {"name": "single", "metric": "validation_loss",
                           "max_length": {"batches": 20}}}
    c = login(master)
    exp_id = create_experiment(httpx.Client(base_url=master.url + "/api/v1", timeout=60),
                               config, tiny_dir, activate=False)
    (trial,) = c.get(f"/api/v1/experiments/{exp_id}/trials").json()["trials"]
    env = {"DET_MASTER": master.url}
    for args in ([str(exp_id)], ["-t", str(trial["id"])]):
        out = run_det(["tensorboard", "start", *args, "--no-browser"], env=env)
        assert out.returncode == 1, out.stdout + out.stderr
        assert out.stderr.strip().splitlines()[-1] == (
            f"det: error: No metrics to show: the trials of experiment {exp_id} (PAUSED) "
            "have not trained a batch yet. Start a TensorBoard once they have (or activate "
            "the experiment). (HTTP 400)"), out.stderr
        assert "Traceback" not in out.stderr
    assert c.get("/api/v1/tasks", params={"all": "true"}).json()["tasks"] == []


def test_notebook_api_through_proxy_with_auth_only(master, tmp_path):
    pytest.importorskip("jupyterlab", reason="the optional extra 'notebook'")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "analysis.py").write_text("x = 1\n")
    c = login(master)
    nb = create_task(c, "notebook", context=context_b64(ctx))
    base = f"/proxy/{nb['id']}"

    def status():
        r = c.get(f"{base}/api/status")
        return r.json() if r.status_code == 200 else None

    assert "started" in wait_until(status, 120, "JupyterLab")
    contents = c.get(f"{base}/api/contents").json()
    assert [f["name"] for f in contents["content"]] == ["analysis.py"]
    # A request body goes through whole (Content-Length kept), a PUT's too.
    put = c.put(f"{base}/api/contents/notes.txt",
                json={"type": "file", "format": "text", "content": "x" * 100_000})
    assert put.status_code in (200, 201), put.text
    assert c.get(f"{base}/api/contents/notes.txt").json()["content"] == "x" * 100_000
    c.delete(f"{base}/api/contents/notes.txt")
    assert httpx.get(master.url + f"{base}/api/status").status_code == 401
    # A browser: ?det_token= once, then a cookie.
    token = c.headers["Authorization"].split()[1]
    browser = httpx.Client(base_url=master.url, follow_redirects=True)
    assert browser.get(f"{base}/api/status?det_token={token}").status_code == 200
    assert browser.get(f"{base}/api/status").status_code == 200
    # The notebook holds the only slot; killing it frees the slot.
    cmd = create_task(c, "command", config={"entrypoint": "echo ran"})
    time.sleep(1.0)
    assert task(c, cmd["id"])["state"] == "PENDING"
    c.post(f"/api/v1/tasks/{nb['id']}/kill")
    wait_task(c, nb["id"], "TERMINATED")
    assert wait_task(c, cmd["id"], "TERMINATED")["exit_code"] == 0


def test_shell_round_trips_through_a_pty(master):
    from websockets.sync.client import connect

    c = login(master)
    sh = create_task(c, "shell")
    wait_task(c, sh["id"], "RUNNING")
    # The window's size as `det shell open` sends it: the PTY has it before the shell starts.
    url = master.url.replace("http://", "ws://") + f"/proxy/{sh['id']}/?rows=33&cols=101"
    with pytest.raises(Exception):
        with connect(url, open_timeout=10) as ws:
            ws.recv(timeout=5)

    def connected():
        try:
            return connect(url, additional_headers={"Authorization": c.headers["Authorization"]},
                           open_timeout=10)
        except Exception:
            return None

    ws = wait_until(connected, 60, "shell server")
    # Another user may not use it; an admin may.
    admin = httpx.post(master.url + "/api/v1/auth/login",
                       json={"username": "admin", "password": ""}).json()["token"]
    assert c.post("/api/v1/users", json={"username": "alice"},
                  headers={"Authorization": f"Bearer {admin}"}).status_code == 201
    alice = httpx.post(master.url + "/api/v1/auth/login",
                       json={"username": "alice", "password": ""}).json()["token"]
    proxied = master.url + f"/proxy/{sh['id']}/"
    assert httpx.get(proxied, headers={"Authorization": f"Bearer {alice}"}).status_code == 403
    assert httpx.get(proxied, headers={"Authorization": f"Bearer {admin}"}).status_code != 403
    assert httpx.post(master.url + f"/api/v1/tasks/{sh['id']}/kill",
                      headers={"Authorization": f"Bearer {alice}"}).status_code == 403
    reader = PtyReader(ws)

    ws.send(b"stty size; tty; echo cwd=$PWD; echo MARK$((6*7))\n")
    reader.until(b"MARK42")
    assert b"33 101" in reader.output and b"/dev/pts/" in reader.output
    ws.send(json.dumps({"resize": [40, 120]}))  # the window changes size
    ws.send(b"stty size; echo MARK$((6*8))\n")
    reader.until(b"MARK48")
    assert b"40 120" in reader.output
    assert b"/work" in reader.output.split(b"cwd=")[-1].split(b"\n")[0]
    # A foreground job that says when it runs (a fixed pause raced the shell's fork on a
    # loaded machine: a Ctrl-C before it reached the shell, and `sleep` held the prompt).
    ws.send(b"sh -c 'echo RUNNING$((40+2)); exec sleep 300'\n")
    reader.until(b"RUNNING42")
    ws.send(b"\x03")  # Ctrl-C interrupts the foreground job, not the shell
    ws.send(b"echo AFTER$((1+1))\n")
    reader.until(b"AFTER2")
    ws.send(b"exit 3\n")
    deadline = time.monotonic() + 20
    closed, texts = False, []
    while time.monotonic() < deadline and not closed:
        try:
            message = ws.recv(timeout=1)
        except TimeoutError:
            continue
        except Exception:
            closed = True
            continue
        if isinstance(message, str):
            texts.append(message)
    assert closed and [json.loads(t) for t in texts] == [{"exit": 3}], texts
    # `det shell open` without a terminal: stdin to the shell, its output to stdout.
    piped = subprocess.run([sys.executable, "-m", "determined.cli", "shell", "open", sh["id"]],
                           input="echo PIPED$((2+3))\nexit\n", capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, DET_MASTER=master.url))
    assert "PIPED5" in piped.stdout, piped.stderr
    c.post(f"/api/v1/tasks/{sh['id']}/kill")
    assert wait_task(c, sh["id"], "TERMINATED")["slot_ids"] == [0]
    cmd = create_task(c, "command", config={"entrypoint": "true"})
    assert wait_task(c, cmd["id"], "TERMINATED")["exit_code"] == 0


def test_notebook_start_prints_the_url_once_jupyter_answers(master):
    pytest.importorskip("jupyterlab", reason="the optional extra 'notebook'")
    out = run_det(["notebook", "start", "--no-browser"], env={"DET_MASTER": master.url},
                  timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    url = out.stdout.strip()
    assert "/lab?det_token=" in url, out.stdout
    browser = httpx.Client(follow_redirects=True, timeout=30)
    assert browser.get(url).status_code == 200  # ready when printed: no 502 first


def test_notebook_start_queued_for_a_slot_says_so_and_waits(master):
    """With every slot busy `det notebook start` printed nothing for 300 s, then "did not
    answer"; it says the notebook waits for a slot and waits until it runs."""
    pytest.importorskip("jupyterlab", reason="the optional extra 'notebook'")
    env = dict(os.environ, DET_MASTER=master.url, COLUMNS="80")
    busy = run_det(["cmd", "run", "-d", "sleep 300"], env={"DET_MASTER": master.url})
    assert busy.returncode == 0, busy.stderr
    busy_id = busy.stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "determined.cli", "notebook", "start",
                             "--no-browser"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watchdog = __import__("threading").Timer(240, proc.kill)
    watchdog.start()
    try:
        launched = proc.stderr.readline()
        assert launched.startswith("Launched notebook "), launched
        nb_id = launched.split()[-1]
        said = _read_wait_line(proc, login(master), "notebook", nb_id)
        assert busy_id in said, said  # the master's reason names the slot's holder
        assert run_det(["cmd", "kill", busy_id], env={"DET_MASTER": master.url}).returncode == 0
        out, err = proc.communicate(timeout=240)
    finally:
        watchdog.cancel()
    assert proc.returncode == 0, err
    assert "/lab?det_token=" in out, out + err
    assert "waits" not in err, err  # said once
    run_det(["notebook", "kill", nb_id], env={"DET_MASTER": master.url})


def _read_wait_line(proc: subprocess.Popen, c: httpx.Client, kind: str, task_id: str) -> str:
    """The CLI's next stderr lines, which must say why the task waits as the master does:
    ``<kind> <id> waits: <detail>``, wrapped to its 80 columns ($COLUMNS); one line."""
    detail = wait_until(lambda: (task(c, task_id).get("waiting") or {}).get("detail"), 60,
                        f"the master to say why {task_id} waits")
    said = f"{kind} {task_id} waits: {detail}"
    wrapped = textwrap.fill(said, width=80, subsequent_indent="  ").splitlines()
    lines = [proc.stderr.readline().rstrip("\n") for _ in wrapped]
    assert lines == wrapped, lines
    return said


def test_cmd_run_queued_for_a_slot_says_why_in_one_line(master):
    """`det cmd run` behind a busy slot printed nothing until the command ran; then two
    lines, a generic one and the master's reason. It says the reason alone, once, within
    80 columns, then prints the command's output."""
    env = {"DET_MASTER": master.url}
    busy = run_det(["cmd", "run", "-d", "sleep 300"], env=env)
    assert busy.returncode == 0, busy.stderr
    proc = subprocess.Popen([sys.executable, "-m", "determined.cli", "cmd", "run",
                             "echo ran"], env=dict(os.environ, COLUMNS="80", **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = __import__("threading").Timer(240, proc.kill)
    watchdog.start()
    try:
        launched = proc.stderr.readline()
        cmd_id = launched.split()[-1]
        said = _read_wait_line(proc, login(master), "command", cmd_id)
        assert busy.stdout.strip() in said, said  # the master's reason names the holder
        assert run_det(["cmd", "kill", busy.stdout.strip()], env=env).returncode == 0
        out, err = proc.communicate(timeout=240)
    finally:
        watchdog.cancel()
    assert proc.returncode == 0 and out.strip() == "ran", out + err
    assert "waits" not in err, err  # the one line above was all


def test_cmd_run_on_a_free_slot_does_not_say_it_waits(master):
    """Every new task is PENDING until a scheduling pass places it: `det cmd run` on an
    idle cluster said "waits for a free slot" each time; only a task the master says
    waits (its `waiting` reason) is reported as queued."""
    env = {"DET_MASTER": master.url}
    for _ in range(3):  # the race it lost was nearly certain; three runs make sure
        out = run_det(["cmd", "run", "echo ran"], env=env)
        assert out.returncode == 0 and out.stdout.strip() == "ran", out.stdout + out.stderr
        assert "waits" not in out.stderr, out.stderr


def test_killing_an_ended_task_says_it_had_ended(master):
    """`det cmd kill` of a command that had exited by itself said "killed command ID"."""
    env = {"DET_MASTER": master.url}
    out = run_det(["cmd", "run", "-d", "exit 4"], env=env)
    assert out.returncode == 0, out.stderr
    task_id = out.stdout.strip()
    c = login(master)
    wait_task(c, task_id, "TERMINATED")
    killed = run_det(["cmd", "kill", task_id], env=env)
    assert (killed.returncode, killed.stdout.strip()) == (
        0, f"command {task_id} had already ended (exited, exit code 4); nothing to kill"), \
        killed.stdout + killed.stderr
    assert task(c, task_id)["end_reason"] == "exited"
    # Through another kind's kill it is still named a command (was "shell ID had ...").
    killed = run_det(["shell", "kill", task_id], env=env)
    assert killed.stdout.startswith(f"command {task_id} had already ended"), killed


def test_kill_returns_once_the_task_has_ended(master):
    """`det cmd|notebook|shell|tensorboard kill` returned while the task still ran, so a
    `det task list` right after showed it RUNNING; now kill waits until it has ended.
    The command takes 3 s to end after SIGTERM."""
    env = {"DET_MASTER": master.url}
    slow = "trap 'sleep 3; exit 0' TERM; echo up; while true; do sleep 0.2; done"
    out = run_det(["cmd", "run", "-d", slow], env=env)
    assert out.returncode == 0, out.stderr
    task_id = out.stdout.strip()
    c = login(master)
    wait_until(lambda: any(l["line"] == "up" for l in
                           c.get(f"/api/v1/tasks/{task_id}/logs").json()["logs"]),
               60, "the command's trap set")
    killed = run_det(["cmd", "kill", task_id], env=env)
    assert (killed.returncode, killed.stdout.strip()) == (0, f"killed command {task_id}"), \
        killed.stderr
    listing = json.loads(run_det(["task", "list", "--json"], env=env).stdout)
    row = next(r for r in listing if r["id"] == task_id)
    assert (row["state"], row["end_reason"]) == ("TERMINATED", "killed"), row

    shell = create_task(c, "shell")
    wait_task(c, shell["id"], "RUNNING")
    killed = run_det(["shell", "kill", shell["id"]], env=env)
    assert killed.returncode == 0, killed.stderr
    assert task(c, shell["id"])["state"] == "TERMINATED"
