"""A trial spanning two agents that live in network namespaces of their own (the issue's
"separate network namespaces per agent where available"): they reach the master and
each other only over veth links to a bridge, as separate machines would. The cluster
runs inside ``unshare --net`` (tests/agent/netns_cluster.py), so nothing on this
machine's own network changes."""

import os
import pathlib
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e
SCRIPT = pathlib.Path(__file__).resolve().parent / "netns_cluster.py"


def _namespaces_available() -> bool:
    try:
        return subprocess.run(["unshare", "--net", "ip", "link", "add", "br-probe", "type",
                               "bridge"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _namespaces_available(),
                    reason="network namespaces need root (unshare --net, ip): the agents "
                           "are tested as separate processes in test_spanning_agents.py")
@pytest.mark.parametrize("kind", ["trial", "script"])
def test_trial_across_agents_in_separate_network_namespaces(tmp_path, kind):
    proc = subprocess.Popen(["unshare", "--net", "--fork", sys.executable, str(SCRIPT),
                             str(tmp_path), *(["script"] if kind == "script" else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:  # the script's own finally stops its master and agents
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 0 and "RESULT ok" in stdout, (stdout[-8000:], stderr[-4000:])
