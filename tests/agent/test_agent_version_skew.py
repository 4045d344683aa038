"""Agents of another release than their master. An agent from before the agent protocol
(its registration has no ``protocol``; such agents registered and then failed every
trial, their harness rejecting spec fields the master added since, e.g.
``tensorboard_path``) is refused at registration with one sentence naming both versions,
answered to it and in the master's log. A current agent whose master answers
``GET /master`` as one from before (no ``agent_protocol``; a real master behind a
rewriting proxy) refuses itself with the same sentence and never registers: that master
would reject its registration as a malformed request."""

import pathlib
import sys

import httpx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, AgentProcess  # noqa: E402
from proxy_testing import DroppingProxy  # noqa: E402

import determined  # noqa: E402
from determined._version import AGENT_PROTOCOL  # noqa: E402

#: What an agent from before the agent protocol sent to register (commit 5d102ed).
OLDER_REGISTRATION = {"slots": 1, "label": "", "running": [], "version": "0.13.0",
                      "slot_gpus": []}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with AgentCluster(tmp_path_factory.mktemp("skew"), {"resource_manager": {"slots": 0}}) as c:
        yield c


def test_an_older_agent_is_refused_naming_both_versions(cluster):
    r = httpx.post(cluster.master.url + "/api/v1/agents/old-box/register",
                   json=OLDER_REGISTRATION, timeout=30)
    assert r.status_code == 400, r.text
    expected = (f"Agent old-box is an older release than its master: agent Determined "
                f"0.13.0 (agent protocol 0), master Determined {determined.__version__} "
                f"(agent protocol {AGENT_PROTOCOL}); upgrade the agent to the master's version")
    assert expected in r.json()["error"], r.text
    assert cluster.master.log().count(f"refused agent old-box: {expected}") == 1, \
        cluster.master.log()
    assert "old-box" not in cluster.agent_ids()


def test_the_master_names_its_agent_protocol_and_a_current_agent_registers(cluster):
    info = httpx.get(cluster.master.url + "/api/v1/master", timeout=30).json()
    assert info["agent_protocol"] == AGENT_PROTOCOL, info
    cluster.ensure_agents("new-box")
    assert "registered with" in cluster.agents["new-box"].log()


def test_a_newer_agent_refuses_an_older_master_naming_both_versions(cluster, tmp_path):
    def older(info):
        return {k: v for k, v in info.items() if k not in ("agent_protocol",
                                                          "idempotent_create")}
    proxy = DroppingProxy(cluster.master.port, master_info=older)
    try:
        agent = AgentProcess(f"http://127.0.0.1:{proxy.port}", "newer-box", tmp_path).start()
        assert agent.proc is not None
        assert agent.proc.wait(90) == 2, agent.log()
    finally:
        proxy.close()
    expected = (f"Agent newer-box is a newer release than its master: agent Determined "
                f"{determined.__version__} (agent protocol {AGENT_PROTOCOL}), master "
                f"Determined {determined.__version__} (agent protocol 0); upgrade the master, "
                "or run an agent of the master's version")
    assert agent.log().count(expected) == 1, agent.log()
    assert "master unreachable" not in agent.log(), agent.log()
    assert not [r for r in proxy.requests if b"/register" in r], proxy.requests
    assert "newer-box" not in cluster.agent_ids()
