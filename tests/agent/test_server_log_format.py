"""Every process serving the cluster logs ``12:04:31 INFO message``, as a trial's processes
do (common/log_format.py): an agent's own log, and the processes of a shell, TensorBoard
and notebook task (each started here as its launcher starts it). The master's lines also
name their logger: tests/master/e2e/test_master_log_format.py."""

import json
import re
import subprocess
import sys
import time

import pytest

from agent_testing import AgentCluster
from master_testing import free_port, wait_until
from determined.harness._rank_logs import LOG_FORMAT, LOG_TIME_FORMAT

pytestmark = pytest.mark.e2e

#: A log line in the one format: the time to the second, no date, then the level.
LINE = re.compile(r"^\d\d:\d\d:\d\d (INFO|WARNING|ERROR) \S")


def test_the_trial_format_is_the_one_format():
    assert (LOG_FORMAT, LOG_TIME_FORMAT) == ("%(asctime)s %(levelname)s %(message)s",
                                             "%H:%M:%S")


def test_an_agent_logs_in_the_format(tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0}}) as cluster:
        agent = cluster.agent("a1", slots=1)
        wait_until(lambda: "registered with" in agent.log(), 60, "the agent's first line")
        assert agent.stop() == 0
        lines = [line for line in agent.log().splitlines() if line.strip()]
    assert any(re.match(r"^\d\d:\d\d:\d\d INFO det-agent: a1 registered with ", line)
               for line in lines), lines
    assert any(re.match(r"^\d\d:\d\d:\d\d INFO det-agent: a1 deregistered", line)
               for line in lines), lines
    assert all(LINE.match(line) for line in lines), lines
    assert not any("HTTP Request" in line for line in lines), lines  # no line per poll


def _first_line(argv, tmp_path, needle: str, timeout: float = 120.0,
                whole: bool = False) -> str:
    """The first line of the process ``argv`` containing ``needle`` (stderr and stdout
    together, as a task's log has them; ``whole``: its output up to there); the process
    is ended after it."""
    out = tmp_path / "out.log"
    with open(out, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=tmp_path,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            text = out.read_text(errors="replace")
            found = [l for l in text.splitlines() if needle in l]
            if found:
                return text if whole else found[0]
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_shell_task_logs_in_the_format(tmp_path):
    line = _first_line([sys.executable, "-m", "determined.tasks.shell", "--port",
                        str(free_port())], tmp_path, "shell server listening")
    assert LINE.match(line), line


def test_a_tensorboard_task_logs_in_the_format(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"runs": []}))
    line = _first_line([sys.executable, "-m", "determined.tasks.tensorboard", "--port",
                        str(free_port()), "--spec", str(spec), "--logdir",
                        str(tmp_path / "logs")], tmp_path, "TensorBoard over no trials")
    assert LINE.match(line), line
    # TensorBoard's start-up steps and its data server's reloads (every few seconds, in a
    # format of their own) are left out: the log is ours and TensorBoard's banner.
    text = _first_line([sys.executable, "-m", "determined.tasks.tensorboard", "--port",
                        str(free_port()), "--spec", str(spec), "--logdir",
                        str(tmp_path / "logs")], tmp_path,
                       "Press CTRL+C to quit", whole=True)
    assert "Polling for data server port" not in text and "load cycle" not in text, text


def test_a_notebook_task_logs_in_the_format(tmp_path):
    env_dirs = ["--ServerApp.root_dir=" + str(tmp_path)]
    line = _first_line([sys.executable, "-m", "determined.tasks.notebook", "--no-browser",
                        "--ip=127.0.0.1", f"--port={free_port()}", *env_dirs], tmp_path,
                       "extension was successfully")
    assert LINE.match(line), line
