"""The package version, in a leaf module: code inside the package reads it without
importing the package face."""

__version__ = "0.13.0"

# What a master and its remote agents must share: bump it when the master starts sending
# agents (or their trials' harness) something an agent from before cannot run, or the
# agents start sending what a master from before rejects. Agents from before this number
# existed send none (0). A master refuses an agent with another number at registration.
# tests/agent/test_agent_protocol_schema.py fails when the wire schema changes without
# a bump (the schema of each protocol: tests/agent/agent_protocol_schema.json).
AGENT_PROTOCOL = 1


def agent_skew_message(agent_id: str, agent_version: str, agent_protocol: int,
                       master_version: str, master_protocol: int) -> str:
    """The one sentence a master and an agent of different agent protocols both show."""
    older = "an older" if agent_protocol < master_protocol else "a newer"
    fix = ("upgrade the agent to the master's version" if agent_protocol < master_protocol
           else "upgrade the master, or run an agent of the master's version")
    return (f"Agent {agent_id} is {older} release than its master: agent Determined "
            f"{agent_version or '(unknown)'} (agent protocol {agent_protocol}), master "
            f"Determined {master_version} (agent protocol {master_protocol}); {fix} "
            f"(install the same determined package on both) and start it again")
