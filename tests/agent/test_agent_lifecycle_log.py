"""Agents joining and leaving stand out in the master's log (`det master logs`)."""

import pytest

from agent_testing import AgentCluster
from det_cli_testing import run_det
from master_testing import wait_until

pytestmark = pytest.mark.e2e


def _master_log(url: str) -> str:
    out = run_det(["master", "logs"], env={"DET_MASTER": url}, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_agent_joined_and_left_are_lifecycle_lines(tmp_path):
    with AgentCluster(tmp_path, {"resource_manager": {"slots": 0}}) as cluster:
        agent = cluster.agent("a1", slots=2)
        # The master logs these as it answers the request that made the agent listed:
        # waited for, not read at once.
        wait_until(lambda: "lifecycle: agent a1 joined (2 slots)" in _master_log(
            cluster.master.url), 60, "the agent's joining logged")
        # The registration's details, from the master's logger (not a bare print).
        wait_until(lambda: "determined.master: agent a1 registered from 127.0.0.1 with 2 "
                   "slot(s)" in _master_log(cluster.master.url), 60, "the registration logged")
        assert agent.stop() == 0
        wait_until(lambda: "lifecycle: agent a1 left (it shut down)"
                   in _master_log(cluster.master.url), 60, "the agent's leaving logged")
        wait_until(lambda: "determined.master: agent a1 deregistered"
                   in _master_log(cluster.master.url), 60, "the deregistration logged")
