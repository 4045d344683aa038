"""One resource manager over the embedded agent (if it has slots), remote agents and a
Ray cluster (with ``type: ray``): each call goes to the manager owning the agent."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from determined.master import scheduler
from determined.master.resource_managers._base import Part, ResourceManager, TrialLaunch
from determined.master.resource_managers._embedded import EmbeddedResourceManager
from determined.master.resource_managers._remote import RemoteResourceManager

__all__ = ["CompositeResourceManager"]


class CompositeResourceManager:
    """What ``Master.rm`` is: every manager's agents behind one
    :class:`~determined.master.resource_managers._base.ResourceManager`.

    Args:
        embedded: the agent on the master's machine, or None (``slots: 0``).
        remote: the registry of remote agents.
        ray: the Ray cluster's nodes (``RayResourceManager``), or None.
    """

    def __init__(self, embedded: Optional[EmbeddedResourceManager],
                 remote: RemoteResourceManager, ray: Optional[Any] = None):
        self.embedded = embedded
        self.remote = remote
        self.ray = ray
        self.managers: List[ResourceManager] = [
            m for m in (embedded, remote, ray) if m is not None]
        #: ``{agent_id: (enabled, disabled slot indices)}`` set by ``det agent|slot
        #: enable|disable``: a disabled agent or slot gets no new trials (drain).
        self.flags: Dict[str, Tuple[bool, FrozenSet[int]]] = {}

    def _owner(self, agent_id: str) -> Optional[ResourceManager]:
        return next((m for m in self.managers if m.has_agent(agent_id)), None)

    @property
    def slots(self) -> int:
        """Slots of every live agent."""
        return sum(m.slots for m in self.managers)

    @property
    def local_slots(self) -> int:
        """Slots of the embedded agent (0 without one)."""
        return self.embedded.slots if self.embedded is not None else 0

    def agents(self) -> List[scheduler.Agent]:
        return [self._flagged(a) for m in self.managers for a in m.agents()]

    def _flagged(self, agent: scheduler.Agent) -> scheduler.Agent:
        enabled, disabled = self.flags.get(agent.id, (True, frozenset()))
        disabled = frozenset(s for s in disabled if s < agent.slots)
        if enabled and not disabled:
            return agent
        return dataclasses.replace(agent, enabled=enabled, disabled_slots=disabled)

    def span_groups(self) -> List[FrozenSet[str]]:
        """The sets of agents one trial may span: each spanning manager's agents (the
        embedded agent starts a trial's ranks itself and joins none)."""
        return [frozenset(a.id for a in m.agents()) for m in self.managers
                if m is not self.embedded]

    def has_agent(self, agent_id: str) -> bool:
        return self._owner(agent_id) is not None

    def can_span(self, parts: Sequence[Part]) -> bool:
        """Whether a trial may run across these parts: all on one manager that can span
        them (remote agents, Ray nodes; the embedded agent starts a trial's ranks itself)."""
        owner = self._owner(parts[0][0]) if parts else None
        return owner is not None and owner.can_span(parts)

    def launch(self, launch: TrialLaunch) -> Optional[int]:
        """Start the trial on the manager of its agent(s); the pid for the embedded agent."""
        owner = self._owner(launch.agent_id)
        if owner is None:
            raise RuntimeError(f"agent {launch.agent_id!r} is not connected (lost or shut down)")
        if launch.spans and not owner.can_span(launch.parts):
            raise RuntimeError(f"trial {launch.trial_id} cannot run across "
                               f"{[a for a, _ in launch.parts]}")
        return owner.launch(launch)

    def holds(self, trial_id: int) -> bool:
        return any(m.holds(trial_id) for m in self.managers)

    def kill(self, trial_id: int) -> None:
        """SIGKILL the trial wherever it runs (no-op if it runs nowhere)."""
        for m in self.managers:
            if m.holds(trial_id):
                m.kill(trial_id)
                return

    def runs_tasks(self, agent_id: str) -> bool:
        """Whether tasks go to ``agent_id`` through :meth:`launch_task` (a remote agent or
        a Ray node; the embedded agent's tasks are the task manager's own processes)."""
        owner = self._owner(agent_id)
        return owner is not None and owner.runs_tasks(agent_id)

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        """Send a task to a remote agent or Ray node; returns its launch id."""
        owner = self._owner(agent_id)
        if owner is None or not owner.runs_tasks(agent_id):
            raise RuntimeError(f"agent {agent_id!r} takes no tasks (lost, or the master's own)")
        return owner.launch_task(agent_id, task_id, command)

    def holds_task(self, task_id: str) -> bool:
        return any(m.holds_task(task_id) for m in self.managers)

    def kill_task(self, task_id: str) -> None:
        """Stop a task :meth:`launch_task` started (no-op once it ended)."""
        for m in self.managers:
            if m.holds_task(task_id):
                m.kill_task(task_id)
                return

    def pid(self, trial_id: int) -> Optional[int]:
        """The pid of an embedded trial (None for remote ones)."""
        return self.embedded.pid(trial_id) if self.embedded is not None else None

    def close(self) -> None:
        for m in reversed(self.managers):
            m.close()
