"""`det deploy local up` (and the master itself) on a port that is already held."""

import os
import socket
import subprocess
import sys

import pytest

from det_cli_testing import run_det, run_det_in_terminal
from master_testing import MasterProcess, free_port

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def listener():
    """A plain program holding a loopback port (not a master)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_port_held_by_another_program_is_one_line(tmp_path, listener):
    out = run_det(["deploy", "local", "up", "--port", listener, "--data-dir", tmp_path / "d",
                   "--timeout", 60], timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"port {listener} is already in use by another program" in lines[0]
    assert out.stdout == ""
    assert not (tmp_path / "d" / "master.json").exists()


def test_port_refusal_fits_an_80_column_terminal(tmp_path, listener):
    """On a terminal the refusal is folded at 80 columns like every other error (it was
    one line of 117 columns); in a pipe it stays one line (above)."""
    code, out = run_det_in_terminal(["deploy", "local", "up", "--port", listener,
                                     "--data-dir", tmp_path / "d"], timeout=120)
    assert code == 1, out
    lines = out.strip().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), out
    assert lines[0].startswith(f"det: error: port {listener} is already in use")
    assert lines[-1].startswith("  ") and " ".join(out.split()).endswith(
        "stop it or choose another --port")


def test_port_held_by_another_master_is_refused(tmp_path):
    other = MasterProcess(str(tmp_path / "other"), slots=1)
    os.makedirs(other.data_dir)
    other.start(timeout=120)
    try:
        out = run_det(["deploy", "local", "up", "--port", other.port, "--data-dir",
                       tmp_path / "mine"], timeout=120)
        assert out.returncode == 1, out.stdout + out.stderr
        assert out.stderr.strip().splitlines() == [out.stderr.strip()]
        assert f"port {other.port} is already used by another Determined master" in out.stderr
        assert "Master running" not in out.stdout
        assert not (tmp_path / "mine" / "master.json").exists()
    finally:
        other.stop()


def test_master_on_a_held_port_says_so_before_migrations(tmp_path, listener):
    out = subprocess.run([sys.executable, "-m", "determined.master", "--port", str(listener),
                          "--data-dir", str(tmp_path / "d")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"determined-master: cannot listen on 127.0.0.1:{listener}: Address already in use "
        "(another master or program holds the port; choose another with --port)"]


def test_deploy_up_and_down_on_a_free_port(tmp_path):
    port = free_port()
    data = tmp_path / "d"
    out = run_det(["deploy", "local", "up", "--port", port, "--data-dir", data, "--slots", 1],
                  timeout=180)
    try:
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"Master running at http://127.0.0.1:{port}" in out.stdout
        # One fact a line (it was one line of 150 columns): paths on lines of their own.
        lines = out.stdout.splitlines()
        assert lines[0] == f"Master running at http://127.0.0.1:{port} (pid {lines[0].split()[-1]}"
        assert lines[1:3] == [f"Data in {data}", f"Log: {data / 'master.log'}"], lines
        # `down` takes the port `up` was given: another port is refused, naming the right one.
        other = port + 1 if port < 65535 else port - 1
        wrong = run_det(["deploy", "local", "down", "--data-dir", data, "--port", other],
                        timeout=60)
        assert wrong.returncode == 1 and wrong.stdout == ""
        assert (f"runs at http://127.0.0.1:{port}, not on port {other}" in wrong.stderr)
        assert (data / "master.json").exists()
    finally:
        down = run_det(["deploy", "local", "down", "--data-dir", data, "--port", port],
                       timeout=60)
    assert down.returncode == 0 and "Master stopped" in down.stdout


def test_deploy_up_help_explains_every_option():
    """`--port` and `--data-dir` had no help text."""
    out = run_det(["deploy", "local", "up", "--help"], env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert "the master's port (default: 8080)" in out.stdout
    assert "database, logs and checkpoints" in out.stdout


def test_a_missing_master_config_is_a_usage_error_before_anything_starts(tmp_path):
    """It was the master's own failure after it was started: "the master exited with
    code 2: determined-master: [Errno 2] No such file or directory: ..."."""
    missing = tmp_path / "nope.yaml"
    out = run_det(["deploy", "local", "up", "--port", free_port(), "--data-dir",
                   tmp_path / "d", "--master-config", missing], timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.splitlines()[-1] == (
        "det deploy local up: error: argument --master-config: Expected a file to read. "
        f"Received: '{missing}' (no such file)"), out.stderr
    assert not (tmp_path / "d").exists()
