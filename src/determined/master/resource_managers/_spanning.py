"""Trials spanning several remote agents: one *part* (launch) per agent.

A trial whose slots lie on several agents gets one ``launch_part`` command per agent;
the part holding rank 0 (the *chief*, first in the allocation) is sent first. Its agent
picks a free port, reports ``address:port`` (``POST /agents/{id}/rendezvous``, see
:meth:`SpanningMixin.rendezvous`), and only then are the other parts sent, carrying
that address as ``MASTER_ADDR``/``MASTER_PORT``. Each part's ``ranks`` also names its
machine's place (``node_rank``, every part's agent address ``addrs``, the chief's being
the rendezvous address once known, and ``slot_counts``). Each agent starts one process
per slot of its part (rank 0: the trial runner; others: the worker entry of
:mod:`determined.harness._ranks`), or, for a script trial, one process per part that
runs the script (see :meth:`determined.agent.Agent._launch_part`).

Failure: a part that exits non-zero (or whose agent is lost) makes the master kill
every other part; the trial's exit is reported once every part has ended (so its slots
are free when it restarts): 0 if the chief ended cleanly, else ``EXIT_USER_ERROR`` if
any part failed in user code, else the first failure's code. After a clean end of the
chief's part the others get :attr:`SpanningMixin.chief_grace` seconds to end (as on
Ray; see :data:`~determined.launch._machines.CHIEF_GRACE_SECONDS`), then are killed.
Killing the trial kills every part.

The mixin lives on :class:`~determined.master.resource_managers.RemoteResourceManager`
and uses its lock, agents and callbacks; methods whose names start with ``_`` are
called with that lock held.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from determined.launch._machines import CHIEF_GRACE_SECONDS, OUTLIVED_CHIEF, meet_at, part_ranks
from determined.trial_ops import EXIT_USER_ERROR
from determined.master.resource_managers._agent_records import Launch, RemoteAgent

__all__ = ["SpanningMixin"]

logger = logging.getLogger("determined.master")

#: (trial id, exit code, whether the chief's agent was lost) of a trial whose parts ended.
Ended = Tuple[int, int, bool]


@dataclasses.dataclass
class _Group:
    trial_id: int
    chief: str  # launch id of the part with rank 0
    agents: Dict[str, str]  # launch id -> agent id, in rank order
    waiting: Set[str]  # parts not yet queued (until the chief's rendezvous)
    codes: Dict[str, int] = dataclasses.field(default_factory=dict)  # ended, in order
    lost: Set[str] = dataclasses.field(default_factory=set)
    stopping: bool = False  # kills sent to the parts still running
    chief_done_at: Optional[float] = None

    def result(self) -> int:
        if self.codes.get(self.chief) == 0 and self.chief not in self.lost:
            return 0
        failed = [c for c in self.codes.values() if c != 0]
        if EXIT_USER_ERROR in failed:
            return EXIT_USER_ERROR
        return failed[0] if failed else 0


class SpanningMixin:
    """Spanning trials for :class:`RemoteResourceManager` (see the module docstring)."""

    _lock: threading.Lock
    _agents: Dict[str, RemoteAgent]
    _history: Dict[str, int]
    #: Seconds the other parts get to exit after the chief's part ended cleanly.
    chief_grace: float = CHIEF_GRACE_SECONDS

    def _init_spanning(self) -> None:
        self._groups: Dict[int, _Group] = {}
        self._group_of: Dict[str, int] = {}  # launch id -> trial id
        self._later: List[Tuple[int, List[str]]] = []  # log lines to store without the lock

    # -- the master's side -----------------------------------------------------------

    def launch_parts(self, trial_id: int, parts: Sequence[Tuple[str, Sequence[int]]],
                     env: Dict[str, str], spec: Dict[str, Any],
                     experiment_id: int) -> List[str]:
        """Queue the chief's part of a trial spanning ``parts`` (``(agent_id,
        slot_ids)``, the chief's first); the others follow its rendezvous. Returns the
        launch ids, in rank order."""
        with self._lock:
            missing = [a for a, _ in parts if a not in self._agents]
            if missing:
                raise RuntimeError(f"agent(s) {missing} are not connected (lost or shut down)")
            spec = json.loads(json.dumps(spec, default=str))
            ids: List[str] = []
            addrs = [self._agents[a].address for a, _ in parts]
            places = part_ranks([len(s) for _, s in parts], addrs)
            for (agent_id, slot_ids), ranks in zip(parts, places):
                launch_id = uuid.uuid4().hex[:16]
                command = {"type": "launch_part", "launch_id": launch_id,
                           "trial_id": trial_id, "experiment_id": experiment_id,
                           "slot_ids": list(slot_ids), "env": dict(env), "spec": spec,
                           "ranks": ranks}
                self._agents[agent_id].launches[launch_id] = Launch(
                    launch_id, trial_id, tuple(slot_ids), command)
                self._history[launch_id] = trial_id
                self._group_of[launch_id] = trial_id
                ids.append(launch_id)
            group = _Group(trial_id, ids[0], {lid: a for lid, (a, _) in zip(ids, parts)},
                           waiting=set(ids[1:]))
            self._groups[trial_id] = group
            chief_agent = self._agents[parts[0][0]]
            chief_agent.commands.append(chief_agent.launches[ids[0]].command)
            self._wake(chief_agent)  # type: ignore[attr-defined]
            return ids

    def holds_parts(self, trial_id: int) -> bool:
        """Whether the trial runs (or is about to) as parts on several agents."""
        with self._lock:
            return trial_id in self._groups

    def kill_parts(self, trial_id: int) -> None:
        """Kill every part of a spanning trial (parts not yet started are dropped)."""
        with self._lock:
            group = self._groups.get(trial_id)
            if group is None:
                return
            ended = self._stop_group(group, dropped_code=-9)
        if ended is not None:  # callers may hold the master's lock
            threading.Thread(target=self._groups_ended, args=([ended],), daemon=True).start()

    # -- the agent's side ------------------------------------------------------------

    def rendezvous(self, agent_id: str, session: str, launch_id: str, address: str,
                   port: int) -> bool:
        """The chief's agent reports where rank 0 listens: queue the other parts.
        False when the trial no longer waits for it (killed, failed)."""
        with self._lock:
            agent = self._checked(agent_id, session)  # type: ignore[attr-defined]
            group = self._groups.get(self._group_of.get(launch_id, -1))
            if group is None or group.chief != launch_id or group.stopping:
                return False
            host = address or agent.address
            for lid in sorted(group.waiting, key=list(group.agents).index):
                target = self._agents.get(group.agents[lid])
                launch = target.launches.get(lid) if target is not None else None
                if launch is None:  # its agent went away meanwhile
                    continue
                meet_at(launch.command["ranks"], host, port)
                target.commands.append(launch.command)
                self._wake(target)  # type: ignore[attr-defined]
            group.waiting.clear()
        return True

    # -- hooks of the registry (lock held) -------------------------------------------

    def _part_ended(self, launch_id: str, code: int, why: str = "",
                    lost: bool = False) -> Optional[Ended]:
        """A part exited with ``code`` (or its agent was lost); the trial's end once
        every part has ended, else None."""
        trial_id = self._group_of.pop(launch_id, None)
        group = self._groups.get(trial_id) if trial_id is not None else None
        if group is None or launch_id in group.codes:
            return None
        group.codes[launch_id] = code
        group.waiting.discard(launch_id)
        if lost:
            group.lost.add(launch_id)
        agent_id = group.agents[launch_id]
        if launch_id == group.chief and code == 0 and not lost:
            group.chief_done_at = time.monotonic()
        elif not group.stopping and (code != 0 or lost):
            ranks = "the chief's part" if launch_id == group.chief else "a part"
            what = why or f"exited with code {code}"
            self._store_later(group.trial_id, [
                f"det-master: {ranks} of the trial on agent {agent_id}: {what}; stopping "
                f"its other parts"])
            return self._stop_group(group, dropped_code=-9)  # done already if none runs
        return self._group_done(group)

    def _stop_group(self, group: _Group, dropped_code: int) -> Optional[Ended]:
        """Kill every running part; parts never sent count as ended."""
        group.stopping = True
        for launch_id, agent_id in group.agents.items():
            if launch_id in group.codes:
                continue
            agent = self._agents.get(agent_id)
            launch = agent.launches.get(launch_id) if agent is not None else None
            if launch is None:
                group.codes[launch_id] = dropped_code
                self._group_of.pop(launch_id, None)
            elif not launch.delivered:
                agent.commands = [c for c in agent.commands if c.get("launch_id") != launch_id]
                del agent.launches[launch_id]
                group.codes[launch_id] = dropped_code
                self._group_of.pop(launch_id, None)
            else:
                agent.commands.append({"type": "kill", "launch_id": launch_id})
                self._wake(agent)  # type: ignore[attr-defined]
        group.waiting.clear()
        return self._group_done(group)

    def _group_done(self, group: _Group) -> Optional[Ended]:
        if len(group.codes) < len(group.agents):
            return None
        del self._groups[group.trial_id]
        return group.trial_id, group.result(), group.chief in group.lost

    def _sweep_parts(self, now: float) -> List[Ended]:
        """Kill the parts that outlive a cleanly ended chief by :attr:`chief_grace`."""
        out = []
        for group in list(self._groups.values()):
            if (group.chief_done_at is not None and not group.stopping
                    and now - group.chief_done_at > self.chief_grace):
                line = OUTLIVED_CHIEF.format(grace=self.chief_grace)
                logger.info("trial %s: %s", group.trial_id, line)
                self._store_later(group.trial_id, [line])
                ended = self._stop_group(group, dropped_code=0)
                if ended is not None:
                    out.append(ended)
        return out

    def _store_later(self, trial_id: int, lines: List[str]) -> None:
        self._later.append((trial_id, lines))

    # -- without the lock ------------------------------------------------------------

    def _groups_ended(self, ended: Sequence[Ended]) -> None:
        """Store the lines kept under the lock, then report the trials that ended."""
        with self._lock:
            later, self._later = self._later, []
        for trial_id, lines in later:
            self._store(trial_id, lines)  # type: ignore[attr-defined]
        for trial_id, code, chief_lost in ended:
            if chief_lost:
                try:
                    self._on_lost(trial_id)  # type: ignore[attr-defined]
                except Exception as e:  # noqa: BLE001
                    logger.warning("cleaning up lost trial %s failed: %s", trial_id, e)
            self._on_exit(trial_id, code)  # type: ignore[attr-defined]
