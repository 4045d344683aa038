"""Agents of another release than their master: the agent of a real older commit of this
repository (its ``src`` extracted with ``git archive``) is refused at registration, with
one sentence naming both versions in the agent's output and the master's log, instead of
registering and then failing every trial it gets (its harness rejects the trial spec
fields the master added since, such as ``tensorboard_path``). A current agent started
against the master of that commit refuses itself with the same sentence: that master
would reject its registration as a malformed request."""

import os
import pathlib
import subprocess
import sys

import httpx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "master"))

from agent_testing import AgentCluster, AgentProcess  # noqa: E402
from master_testing import OlderMasterProcess, older_source  # noqa: E402

import determined  # noqa: E402
from determined._version import AGENT_PROTOCOL  # noqa: E402

# The commit before trial specs carried tensorboard_path (a7dcb51): its harness's
# TrialEnv takes no such argument, and its agent sends no agent protocol.
OLD_COMMIT = "5d102ed"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with AgentCluster(tmp_path_factory.mktemp("skew"), {"resource_manager": {"slots": 0}}) as c:
        yield c


@pytest.fixture(scope="module")
def old_src(tmp_path_factory) -> pathlib.Path:
    src = older_source(OLD_COMMIT, tmp_path_factory.mktemp("old-checkout"))
    old_env = (src / "determined" / "harness" / "_env.py").read_text()
    assert "tensorboard_path" not in old_env  # really a release from before the change
    return src


def test_an_older_agent_is_refused_naming_both_versions(cluster, old_src, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(old_src))
    agent = AgentProcess(cluster.master.url, "old-box", tmp_path, env=env).start()
    assert agent.proc is not None
    try:
        code = agent.proc.wait(90)
    except subprocess.TimeoutExpired:
        raise AssertionError("the older agent was not refused:\n" + agent.log()) from None
    log = agent.log()
    assert code == 2, log
    expected = (f"Agent old-box is an older release than its master: agent Determined "
                f"{determined.__version__} (agent protocol 0), master Determined "
                f"{determined.__version__} (agent protocol {AGENT_PROTOCOL}); upgrade the "
                "agent to the master's version")
    assert expected in log, log
    assert "(HTTP 400)" in log, log
    assert log.count(expected) == 1, log
    assert cluster.master.log().count(f"refused agent old-box: {expected}") == 1, \
        cluster.master.log()
    assert "old-box" not in cluster.agent_ids()


def test_the_master_names_its_agent_protocol_and_a_current_agent_registers(cluster):
    info = httpx.get(cluster.master.url + "/api/v1/master", timeout=30).json()
    assert info["agent_protocol"] == AGENT_PROTOCOL, info
    cluster.ensure_agents("new-box")
    assert "registered with" in cluster.agents["new-box"].log()


def test_a_newer_agent_refuses_an_older_master_naming_both_versions(old_src, tmp_path):
    (tmp_path / "master").mkdir()
    master = OlderMasterProcess(str(tmp_path / "master"), old_src).start()
    try:
        info = httpx.get(master.url + "/api/v1/master", timeout=30).json()
        assert "agent_protocol" not in info, info  # really the older master
        agent = AgentProcess(master.url, "new-box", tmp_path).start()
        assert agent.proc is not None
        assert agent.proc.wait(90) == 2, agent.log()
        expected = (f"Agent new-box is a newer release than its master: agent Determined "
                    f"{determined.__version__} (agent protocol {AGENT_PROTOCOL}), master "
                    f"Determined {info['version']} (agent protocol 0); upgrade the master, "
                    "or run an agent of the master's version")
        assert agent.log().count(expected) == 1, agent.log()
        assert "master unreachable" not in agent.log(), agent.log()
        agents = httpx.get(master.url + "/api/v1/agents", timeout=30).json()["agents"]
        assert agents == [], agents
    finally:
        master.stop()
