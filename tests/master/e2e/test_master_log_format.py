"""The master's own log lines read ``12:04:31 INFO lifecycle: ...``, the format of every
other process serving the cluster with the logger's name (common/log_format.py): in its
terminal and in ``det master logs``, its HTTP server's warnings too."""

import os
import pathlib
import re
import socket
import subprocess
import sys

import pytest
import yaml

from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

#: A logged line: the time to the second, no date, the level, the logger's name.
LINE = re.compile(r"^\d\d:\d\d:\d\d (INFO|WARNING|ERROR) "
                  r"(lifecycle|determined\.master[\w.]*|uvicorn\.error): \S")
SCRIPT_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "script_trial"


def _logged(text):
    """The lines of ``text`` the master's loggers wrote (its prints name the program)."""
    return [line for line in text.splitlines()
            if "lifecycle: " in line or "determined.master" in line or "uvicorn" in line]


def test_the_masters_terminal_and_det_master_logs_show_time_and_level(master_factory):
    master = master_factory(slots=1)
    config = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=180)
    with socket.create_connection(("127.0.0.1", master.port), timeout=10) as s:
        s.sendall(b"NOT HTTP\r\n\r\n")  # the HTTP server warns of it
        s.recv(1000)
    terminal = wait_until(lambda: (lambda t: t if f"lifecycle: experiment {exp_id} COMPLETED"
                                   in t and "Invalid HTTP" in t else None)(master.log()),
                          60, "the experiment's end and the server's warning")
    assert any(re.match(r"^\d\d:\d\d:\d\d WARNING uvicorn\.error: Invalid HTTP request", line)
               for line in terminal.splitlines()), terminal
    lines = _logged(terminal)
    assert any(re.match(rf"^\d\d:\d\d:\d\d INFO lifecycle: experiment {exp_id} ACTIVE$", line)
               for line in lines), terminal
    assert lines and all(LINE.match(line) for line in lines), terminal
    out = subprocess.run([sys.executable, "-m", "determined.cli", "master", "logs"],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, DET_MASTER=master.url))
    assert out.returncode == 0, out.stderr
    shown = _logged(out.stdout)
    assert any(re.match(rf"^\d\d:\d\d:\d\d INFO lifecycle: experiment {exp_id} ACTIVE$", line)
               for line in shown), out.stdout
    assert shown and all(LINE.match(line) for line in shown), out.stdout
