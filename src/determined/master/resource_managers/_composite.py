"""One resource manager over the embedded agent (if it has slots) and remote agents."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from determined.master import scheduler
from determined.master.resource_managers._embedded import AGENT_ID, EmbeddedResourceManager
from determined.master.resource_managers._remote import RemoteResourceManager

__all__ = ["CompositeResourceManager"]


class CompositeResourceManager:
    """What ``Master.rm`` is: the agents of both kinds behind one interface.

    Args:
        embedded: the agent on the master's machine, or None (``slots: 0``).
        remote: the registry of remote agents.
    """

    def __init__(self, embedded: Optional[EmbeddedResourceManager],
                 remote: RemoteResourceManager, ray: Optional[Any] = None):
        self.embedded = embedded
        self.remote = remote
        #: The Ray cluster's nodes (``RayResourceManager``) with ``type: ray``, else None.
        self.ray = ray
        #: ``{agent_id: (enabled, disabled slot indices)}`` set by ``det agent|slot
        #: enable|disable``: a disabled agent or slot gets no new trials (drain).
        self.flags: Dict[str, Tuple[bool, FrozenSet[int]]] = {}

    @property
    def slots(self) -> int:
        """Slots of every live agent."""
        return self.local_slots + self.remote.slots + (self.ray.slots if self.ray else 0)

    @property
    def local_slots(self) -> int:
        """Slots of the embedded agent (0 without one)."""
        return self.embedded.slots if self.embedded is not None else 0

    def agents(self) -> List[scheduler.Agent]:
        local = self.embedded.agents() if self.embedded is not None else []
        ray = self.ray.agents() if self.ray is not None else []
        return [self._flagged(a) for a in local + self.remote.agents() + ray]

    def _flagged(self, agent: scheduler.Agent) -> scheduler.Agent:
        enabled, disabled = self.flags.get(agent.id, (True, frozenset()))
        disabled = frozenset(s for s in disabled if s < agent.slots)
        if enabled and not disabled:
            return agent
        return dataclasses.replace(agent, enabled=enabled, disabled_slots=disabled)

    def launch(self, agent_id: str, trial_id: int, env: Dict[str, str],
               slot_ids: Sequence[int], cwd: str, spec: Dict[str, Any],
               experiment_id: int, parts: Optional[Sequence[Any]] = None) -> Optional[int]:
        """Start the trial on ``agent_id``; the pid for the embedded agent, else None.

        ``env`` has ``DET_MASTER``, ``DET_TRIAL_TOKEN`` and ``DET_TRIAL_SPEC`` (a file
        on the master's disk holding ``spec``; remote agents get ``spec`` itself).
        """
        if agent_id == AGENT_ID and self.embedded is not None:
            return self.embedded.launch(trial_id, env, slot_ids, cwd)
        if self.ray is not None and self.ray.has_agent(agent_id):
            self.ray.launch(agent_id, trial_id, slot_ids,
                            {k: env[k] for k in ("DET_MASTER", "DET_TRIAL_TOKEN")}, spec,
                            experiment_id, parts=parts)
            return None
        remote_env = {"DET_TRIAL_TOKEN": env["DET_TRIAL_TOKEN"]}
        if parts is not None and len(parts) > 1:  # one part per remote agent
            self.remote.launch_parts(trial_id, parts, remote_env, spec, experiment_id)
            return None
        self.remote.launch(agent_id, trial_id, slot_ids, remote_env, spec, experiment_id)
        return None

    def can_span(self, parts: Sequence[Any]) -> bool:
        """Whether a trial may run across these ``(agent_id, slot_ids)`` parts: Ray nodes
        or remote agents can (ranks rendezvous at rank 0's node or agent); the embedded
        agent starts all of a trial's ranks itself."""
        if self.ray is not None and all(self.ray.has_agent(a) for a, _ in parts):
            return True
        return all(self.remote.has_agent(a) for a, _ in parts)

    def kill(self, trial_id: int) -> None:
        """SIGKILL the trial wherever it runs (no-op if it runs nowhere)."""
        if self.ray is not None and self.ray.holds(trial_id):
            self.ray.kill(trial_id)
        elif self.remote.holds_parts(trial_id):
            self.remote.kill_parts(trial_id)
        elif self.remote.holds(trial_id):
            self.remote.kill(trial_id)
        elif self.embedded is not None:
            self.embedded.kill(trial_id)

    def runs_tasks(self, agent_id: str) -> bool:
        """Whether tasks go to ``agent_id`` through :meth:`launch_task` (a remote agent or
        a Ray node; the embedded agent's tasks are the task manager's own processes)."""
        return self.remote.has_agent(agent_id) or (
            self.ray is not None and self.ray.has_agent(agent_id))

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        """Send a task to a remote agent or Ray node; returns its launch id."""
        if self.ray is not None and self.ray.has_agent(agent_id):
            return self.ray.launch_task(agent_id, task_id, command)
        return self.remote.launch_task(agent_id, task_id, command)

    def kill_task(self, task_id: str) -> None:
        """Stop a task :meth:`launch_task` started (no-op once it ended)."""
        if self.ray is not None and self.ray.holds_task(task_id):
            self.ray.kill_task(task_id)
        else:
            self.remote.kill_task(task_id)

    def pid(self, trial_id: int) -> Optional[int]:
        """The pid of an embedded trial (None for remote ones)."""
        return self.embedded.pid(trial_id) if self.embedded is not None else None

    def close(self) -> None:
        if self.ray is not None:
            self.ray.close()
        self.remote.close()
        if self.embedded is not None:
            self.embedded.close()
