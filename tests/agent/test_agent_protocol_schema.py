"""A forgotten ``AGENT_PROTOCOL`` bump fails here: the agent wire schema a real master
sends and accepts (agent_wire_schema.py) must be the one recorded for the current
protocol in agent_protocol_schema.json, or differ from it only in ways older agents
survive (which must be recorded too, so the next change is judged against them)."""

import copy
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from agent_testing import AgentCluster  # noqa: E402
from agent_wire_schema import (  # noqa: E402
    PRINT_COMMAND,
    WRITE_COMMAND,
    breaking_changes,
    capture,
    compatible_changes,
    recorded_schemas,
)

from determined._version import AGENT_PROTOCOL  # noqa: E402


@pytest.fixture(scope="module")
def current(tmp_path_factory):
    with AgentCluster(tmp_path_factory.mktemp("wire"), {"resource_manager": {"slots": 0}}) as c:
        yield capture(c.master.url, pathlib.Path(__file__).resolve().parent.parent
                      / "fixtures" / "tiny_pytorch")


def test_the_agent_wire_schema_is_the_one_recorded_for_the_agent_protocol(current):
    schemas = recorded_schemas()
    assert str(AGENT_PROTOCOL) in schemas, (
        f"no agent wire schema is recorded for AGENT_PROTOCOL {AGENT_PROTOCOL} in "
        f"tests/agent/agent_protocol_schema.json: record it (run {WRITE_COMMAND})")
    recorded = schemas[str(AGENT_PROTOCOL)]
    breaking = breaking_changes(recorded, current)
    assert not breaking, (
        "the agent wire schema changed in a way agents of protocol "
        f"{AGENT_PROTOCOL} cannot run: " + "; ".join(breaking) + ". Raise AGENT_PROTOCOL "
        "in src/determined/_version.py and record the new schema (run "
        f"{WRITE_COMMAND}; {PRINT_COMMAND} prints it)")
    compatible = compatible_changes(recorded, current)
    assert not compatible, (
        "the agent wire schema changed in a way older agents survive (" +
        "; ".join(compatible) + f"): keep AGENT_PROTOCOL {AGENT_PROTOCOL} and record the "
        f"schema (run {WRITE_COMMAND})")


def test_any_new_trial_env_key_breaks_older_agents(current):
    changed = copy.deepcopy(current)
    changed["trial_env"]["new_field"] = "str"
    assert breaking_changes(current, changed) == [
        "trial_env: 'new_field' added (older agents pass the trial env to TrialEnv(**env): "
        "any new key fails their trials)"]


def test_new_launch_keys_and_optional_request_fields_are_compatible(current):
    changed = copy.deepcopy(current)
    changed["launch_command"]["priority"] = "integer"
    changed["trial_spec"]["threads"] = "string"
    changed["register_body"]["zone"] = {"type": "string", "required": False}
    changed["events_body"]["extra"] = {"type": "string", "required": True}
    del changed["commands_query"]["draining"]
    assert breaking_changes(current, changed) == [
        "commands_query: 'draining' removed",
        "events_body: 'extra' added as required (older agents omit it)",
        "trial_spec: 'threads' changed type integer -> string"]
    assert compatible_changes(current, changed) == [
        "launch_command: 'priority' added", "register_body: 'zone' added"]
