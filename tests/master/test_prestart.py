"""The master starts its embedded agent's zygote first thing (``_prestart``): when its
arguments give it an embedded agent, and never leaves it behind."""

import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

from determined._procs._spawner import discard_prestarted_zygote
from determined.master._prestart import prestart_trial_zygote

pytestmark = pytest.mark.timeout(300)


def _zygotes_with(marker: str) -> "list[int]":
    """Live zygote processes whose environment holds ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"_procs._zygote" in cmdline and marker.encode() in environ and state != "Z":
            found.append(int(pid))
    return found


def _one_zygote_with(marker: str) -> int:
    """The one zygote holding ``marker`` (a just-started one may not have exec'd yet)."""
    deadline = time.monotonic() + 30
    while True:
        found = _zygotes_with(marker)
        if found or time.monotonic() > deadline:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)


@pytest.fixture
def marker(monkeypatch):
    value = uuid.uuid4().hex
    monkeypatch.setenv("DET_TEST_MARKER", value)
    yield value
    discard_prestarted_zygote()


@pytest.mark.parametrize("argv", [["--slots", "0"], ["--help"], ["-h"],
                                  ["--set-password", "admin"], ["--slots", "many"],
                                  ["--config", "/nonexistent/master.yaml"]])
def test_no_zygote_without_an_embedded_agent_or_for_bad_arguments(argv, marker):
    assert prestart_trial_zygote(argv) is False
    assert _zygotes_with(marker) == []


def test_ray_masters_start_no_zygote(tmp_path, marker):
    config = tmp_path / "master.yaml"
    config.write_text("resource_manager:\n  type: ray\n  address: 127.0.0.1:6379\n")
    assert prestart_trial_zygote(["--config", str(config)]) is False
    assert _zygotes_with(marker) == []


def test_a_master_with_slots_starts_one_and_discarding_stops_it(marker):
    assert prestart_trial_zygote(["--slots", "2", "--port", "8080"]) is True
    _one_zygote_with(marker)
    discard_prestarted_zygote()
    assert _zygotes_with(marker) == []


def test_a_master_that_cannot_start_leaves_no_zygote(tmp_path, marker):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        out = subprocess.run([sys.executable, "-m", "determined.master", "--port",
                              str(held.getsockname()[1]), "--slots", "1",
                              "--data-dir", str(tmp_path / "d")],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "cannot listen on" in out.stderr and "Traceback" not in out.stderr
    assert _zygotes_with(marker) == []
