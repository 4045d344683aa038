"""Remote agents: machines that register with the master and long-poll it for commands.

An agent (``python -m determined.agent``, see :mod:`determined.agent._agent`) registers
with its slots and gets a *session*. It then polls for commands -- ``launch`` (start a
trial) and ``kill`` -- and reports its trials' output lines and exit codes; every
request doubles as a heartbeat. An agent that sends nothing for ``timeout`` seconds is
*lost*: its trials count as crashed (restart rules apply) and its slots leave the
cluster until it registers again.

Each launch has an id of its own, so a report about an earlier run of a trial (say from
an agent that was lost and came back) is never mistaken for the current one.

Tasks (commands, notebooks, shells, TensorBoards) travel the same way with commands of
their own -- ``launch_task`` and ``kill_task`` -- and their reports reach
:attr:`RemoteResourceManager.task_events` (the master's task manager): ``started``
(the address the agent's service listens on), output lines, and the exit, or the loss
of the agent.

Locking: one lock guards the registry; callbacks into the master (``on_exit``,
``log_sink``, ``on_change``) are always made without it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from determined.master import scheduler
from determined.master._lifecycle import event
from determined.master.resource_managers._agent_records import Launch, RemoteAgent, TaskLaunch
from determined.master.resource_managers._base import (
    LOST_EXIT_CODE,
    ExitCallback,
    LogSink,
    Part,
    TrialLaunch,
)
from determined.master.resource_managers._spanning import SpanningMixin

__all__ = ["RemoteResourceManager", "TaskEvents", "UnknownSessionError", "LOST_EXIT_CODE"]


logger = logging.getLogger("determined.master")


class TaskEvents(Protocol):
    """What becomes of tasks on remote agents (called without the registry's lock)."""

    def task_started(self, task_id: str, host: str, port: Optional[int]) -> None: ...

    def task_logs(self, task_id: str, lines: List[str]) -> None: ...

    def task_exited(self, task_id: str, code: Optional[int], reason: Optional[str]) -> None:
        """``code`` None: it never ran, or its agent was lost (``reason`` says which)."""


class UnknownSessionError(Exception):
    """The agent's session is not (or no longer) valid: it must register again."""


class RemoteResourceManager(SpanningMixin):
    """The registry of remote agents, their command queues and their liveness (and
    trials spanning several of them: :mod:`._spanning`); a
    :class:`~determined.master.resource_managers._base.ResourceManager`.

    Args:
        on_exit: ``(trial_id, exit_code)`` once a remote trial ended (its logs are
            stored by then) or its agent was lost.
        log_sink: stores a trial's log lines.
        timeout: seconds without a request before an agent is lost.
        on_change: called when the set of agents or their slots changed (wake the
            scheduler).
        on_lost: called with a trial id before its loss is reported through
            ``on_exit`` (revoke its token: a runner cut off from its agent must not
            report any more).
    """

    def __init__(self, on_exit: ExitCallback, log_sink: LogSink, timeout: float = 30.0,
                 on_change: Optional[Callable[[], None]] = None,
                 on_lost: Optional[Callable[[int], Any]] = None):
        if not timeout > 0:
            raise ValueError(f"Expected timeout > 0 seconds. Received: timeout={timeout!r}")
        self.timeout = float(timeout)
        #: How long a poll waits for commands: well within the timeout.
        self.poll_seconds = min(10.0, self.timeout / 3.0)
        self._on_exit = on_exit
        self._log_sink = log_sink
        self._on_change = on_change or (lambda: None)
        self._on_lost = on_lost or (lambda trial_id: None)
        #: Called with an agent id (with a lock held: must not block) when its polls
        #: should look again (commands, a new session, shutdown).
        self.listeners: List[Callable[[str], None]] = []
        self._lock = threading.Lock()
        self._agents: Dict[str, RemoteAgent] = {}
        self._trial_launch: Dict[int, Tuple[str, str]] = {}  # trial id -> (agent, launch)
        self._history: Dict[str, int] = {}  # every launch id sent -> trial id (for logs)
        #: Told about tasks on agents (set by the master's task manager).
        self.task_events: Optional[TaskEvents] = None
        #: Stores readings of a trial's GPUs ``(trial_id, samples)`` (set by the master).
        self.gpu_sink: Optional[Callable[[int, List[Dict[str, Any]]], None]] = None
        self._task_launch: Dict[str, Tuple[str, str]] = {}  # task id -> (agent, launch)
        self._closed = threading.Event()
        self._init_spanning()
        self._monitor = threading.Thread(target=self._watch, name="det-agent-monitor",
                                         daemon=True)
        self._monitor.start()

    # -- the agent's side ----------------------------------------------------------------

    def register(self, agent_id: str, slots: int, label: str = "",
                 running: Sequence[str] = (), address: str = "",
                 slot_gpus: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
        """(Re-)register an agent; returns ``{"session", "poll_seconds", "timeout"}``.

        ``running`` names the launches the agent still runs. Launches the master sent it
        earlier that it no longer runs count as crashed; launches the master does not
        know (e.g. from before a master restart) are killed by its first commands.
        """
        now = time.monotonic()
        lost: List[Tuple[int, str]] = []
        parts_ended = []
        lost_tasks: List[str] = []
        with self._lock:
            old = self._agents.get(agent_id)
            agent = RemoteAgent(agent_id, slots, label, uuid.uuid4().hex, address, now, now,
                                 slot_gpus=[dict(g) for g in slot_gpus])
            running_set = set(running)
            if old is not None:
                self._wake(old)  # a poll of the old session answers "register again"
                for launch in old.launches.values():
                    if launch.delivered and launch.id not in running_set and \
                            launch.id in self._group_of:
                        parts_ended.append(self._part_ended(
                            launch.id, LOST_EXIT_CODE, lost=True,
                            why="the agent registered again without it"))
                    elif launch.delivered and launch.id not in running_set:
                        lost.append((launch.trial_id, launch.id))
                        self._trial_launch.pop(launch.trial_id, None)
                    else:
                        agent.launches[launch.id] = launch
                # Launches not yet sent and kills of launches it still runs carry over.
                agent.commands = [c for c in old.commands
                                  if c.get("launch_id") in agent.launches]
                lost_tasks = self._carry_tasks(old, agent, running_set)
            known = set(agent.launches) | set(agent.task_launches)
            agent.commands[:0] = [{"type": "kill", "launch_id": lid}
                                  for lid in running_set - known]
            self._agents[agent_id] = agent
            session = agent.session
        for trial_id, _ in lost:
            self._lose(trial_id, f"agent {agent_id} registered again without it")
        self._groups_ended([e for e in parts_ended if e is not None])
        for task_id in lost_tasks:
            self._task_exited(task_id, None, f"agent {agent_id} registered again without it")
        event("agent %s %s (%d slots%s)", agent_id, "registered again" if old else "joined",
              slots, f", label {label}" if label else "")
        self._on_change()
        return {"session": session, "poll_seconds": self.poll_seconds, "timeout": self.timeout}

    def poll(self, agent_id: str, session: str, wait: float,
             draining: bool = False) -> List[Dict[str, Any]]:
        """The agent's pending commands, waiting up to ``wait`` seconds for one
        (blocking; an async server uses :meth:`take` and :attr:`listeners`).

        ``draining``: the agent shuts down; its slots leave scheduling at once.
        """
        deadline = time.monotonic() + self.poll_wait(wait)
        if draining:
            self.drain(agent_id, session)
        while True:
            with self._lock:
                wake = self._checked(agent_id, session).wake
            commands = self.take(agent_id, session, force=time.monotonic() >= deadline)
            if commands is not None:
                return commands
            wake.wait(max(0.0, deadline - time.monotonic()))

    def poll_wait(self, wait: float) -> float:
        """How long a poll asking to wait ``wait`` seconds may wait."""
        return max(0.0, min(wait, self.poll_seconds))

    def drain(self, agent_id: str, session: str) -> None:
        """The agent shuts down: its slots leave scheduling at once."""
        with self._lock:
            agent = self._checked(agent_id, session)
            changed, agent.draining = not agent.draining, True
        if changed:
            self._on_change()

    def take(self, agent_id: str, session: str, force: bool = False
             ) -> Optional[List[Dict[str, Any]]]:
        """The agent's pending commands (now delivered), or None if it has none and not
        ``force`` (then ``[]``). Raises UnknownSessionError (also a heartbeat)."""
        with self._lock:
            agent = self._checked(agent_id, session)
            agent.wake.clear()  # under the lock: a new command sets it again
            if not agent.commands and not force and not self._closed.is_set():
                return None
            commands, agent.commands = agent.commands, []
            for command in commands:
                launch = agent.launches.get(command.get("launch_id", ""))
                if command["type"] in ("launch", "launch_part") and launch is not None:
                    launch.delivered = True
                task_launch = agent.task_launches.get(command.get("launch_id", ""))
                if command["type"] == "launch_task" and task_launch is not None:
                    task_launch.delivered = True
            return commands

    def report(self, agent_id: str, session: str, logs: Dict[str, List[str]],
               exits: Dict[str, int],
               started: Optional[Dict[str, Dict[str, Any]]] = None,
               reasons: Optional[Dict[str, str]] = None,
               gpu_metrics: Optional[Dict[str, List[Dict[str, Any]]]] = None) -> None:
        """Store output lines of launches, then handle their exits (in that order).
        ``started``: tasks now running, ``{launch_id: {"host", "port"}}``; ``reasons``:
        why the agent ended a task itself, ``{launch_id: why}``; ``gpu_metrics``: readings
        of the launches' GPUs, ``{launch_id: [sample]}``."""
        ended: List[int] = []
        parts_ended = []
        with self._lock:
            agent = self._checked(agent_id, session)
            task_calls = self._task_reports(agent, started or {}, logs, exits, reasons or {})
            lines = [(self._history[lid], batch) for lid, batch in logs.items()
                     if lid in self._history and batch]
            for launch_id, code in exits.items():
                launch = agent.launches.pop(launch_id, None)
                if launch is None:
                    continue  # an earlier run the master already gave up on
                if launch_id in self._group_of:  # a part of a trial spanning agents
                    parts_ended.append(self._part_ended(launch_id, int(code)))
                    continue
                if self._trial_launch.get(launch.trial_id, ("", ""))[1] == launch_id:
                    del self._trial_launch[launch.trial_id]
                ended.append(launch.trial_id)
            codes = {self._history[lid]: code for lid, code in exits.items()
                     if lid in self._history}
            samples = [(self._history[lid], batch) for lid, batch in (gpu_metrics or {}).items()
                       if lid in self._history and batch]
        for trial_id, batch in lines:
            self._store(trial_id, batch)
        if self.gpu_sink is not None:
            for trial_id, batch in samples:
                self.gpu_sink(trial_id, batch)
        for trial_id in ended:
            self._on_exit(trial_id, int(codes[trial_id]))
        self._groups_ended([e for e in parts_ended if e is not None])
        for call in task_calls:
            self._task_call(*call)

    def deregister(self, agent_id: str, session: str) -> None:
        """The agent is shutting down: its remaining trials count as crashed."""
        with self._lock:
            agent = self._checked(agent_id, session)
            del self._agents[agent_id]
            self._wake(agent)
        event("agent %s left (it shut down)", agent_id)
        self._drop(agent, f"agent {agent_id} shut down")

    # -- the master's side -------------------------------------------------------------

    def agents(self) -> List[scheduler.Agent]:
        """Live agents, for the scheduler."""
        with self._lock:
            return [scheduler.Agent(a.id, a.slots, label=a.label)
                    for a in self._agents.values() if not a.draining]

    def describe(self) -> List[Dict[str, Any]]:
        """Live agents with address, seconds since last contact and their trials."""
        now = time.monotonic()
        with self._lock:
            return [{"id": a.id, "slots": a.slots, "label": a.label, "address": a.address,
                     "slot_gpus": list(a.slot_gpus),
                     "last_seen_seconds_ago": round(now - a.last_seen, 3),
                     "trials": sorted(launch.trial_id for launch in a.launches.values())}
                    for a in self._agents.values()]

    def has_agent(self, agent_id: str) -> bool:
        with self._lock:
            return agent_id in self._agents

    @property
    def slots(self) -> int:
        with self._lock:
            return sum(a.slots for a in self._agents.values() if not a.draining)

    def can_span(self, parts: Sequence[Part]) -> bool:
        """Any of this registry's agents (ranks rendezvous at rank 0's agent)."""
        return all(self.has_agent(a) for a, _ in parts)

    def launch(self, launch: TrialLaunch) -> None:
        """Queue the trial's launch on its agent, or its parts on theirs (the agents
        get the trial's token and spec, not the master's paths)."""
        env = {"DET_TRIAL_TOKEN": launch.env["DET_TRIAL_TOKEN"]}
        if launch.spans:
            self.launch_parts(launch.trial_id, launch.parts, env, launch.spec,
                              launch.experiment_id)
        else:
            self.send_launch(launch.agent_id, launch.trial_id, launch.slot_ids, env,
                             launch.spec, launch.experiment_id)

    def send_launch(self, agent_id: str, trial_id: int, slot_ids: Sequence[int],
                    env: Dict[str, str], spec: Dict[str, Any], experiment_id: int) -> str:
        """Queue a launch on the agent; returns the launch id.

        ``env`` holds ``DET_TRIAL_TOKEN``; ``spec`` is the trial spec (the agent points
        its ``model_dir`` at its own copy of the model definition).
        """
        with self._lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                raise RuntimeError(f"agent {agent_id!r} is not connected (lost or shut down)")
            launch_id = uuid.uuid4().hex[:16]
            command = {"type": "launch", "launch_id": launch_id, "trial_id": trial_id,
                       "experiment_id": experiment_id, "slot_ids": list(slot_ids),
                       "env": dict(env), "spec": json.loads(json.dumps(spec, default=str))}
            agent.launches[launch_id] = Launch(launch_id, trial_id, tuple(slot_ids), command)
            agent.commands.append(command)
            self._trial_launch[trial_id] = (agent_id, launch_id)
            self._history[launch_id] = trial_id
            self._wake(agent)
            return launch_id

    def holds(self, trial_id: int) -> bool:
        """Whether the trial runs (or is about to) on remote agents."""
        with self._lock:
            return trial_id in self._trial_launch or trial_id in self._groups

    def kill(self, trial_id: int) -> None:
        """Ask the trial's agent(s) to SIGKILL it (a launch not yet sent is dropped)."""
        if self.holds_parts(trial_id):
            self.kill_parts(trial_id)
            return
        with self._lock:
            found = self._trial_launch.get(trial_id)
            if found is None:
                return
            agent = self._agents.get(found[0])
            launch = agent.launches.get(found[1]) if agent is not None else None
            if agent is None or launch is None:
                return
            if not launch.delivered:
                agent.commands = [c for c in agent.commands if c.get("launch_id") != launch.id]
                del agent.launches[launch.id]
                del self._trial_launch[trial_id]
                undelivered = True
            else:
                agent.commands.append({"type": "kill", "launch_id": launch.id})
                self._wake(agent)
                undelivered = False
        if undelivered:  # never started: it ended now (callers may hold the master's lock)
            threading.Thread(target=self._on_exit, args=(trial_id, LOST_EXIT_CODE),
                             daemon=True).start()

    # -- tasks -------------------------------------------------------------------------

    def runs_tasks(self, agent_id: str) -> bool:
        return self.has_agent(agent_id)

    def holds_task(self, task_id: str) -> bool:
        with self._lock:
            return task_id in self._task_launch

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        """Queue a ``launch_task`` command (``command`` without its type and launch id:
        see :mod:`determined.agent._agent`); returns the launch id."""
        with self._lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                raise RuntimeError(f"agent {agent_id!r} is not connected (lost or shut down)")
            launch_id = uuid.uuid4().hex[:16]
            agent.task_launches[launch_id] = TaskLaunch(launch_id, task_id)
            agent.commands.append(dict(command, type="launch_task", launch_id=launch_id,
                                       task_id=task_id))
            self._task_launch[task_id] = (agent_id, launch_id)
            self._wake(agent)
            return launch_id

    def kill_task(self, task_id: str) -> None:
        """Ask the task's agent to stop it (SIGTERM, then SIGKILL); a launch not yet
        sent ends at once (``task_exited`` from another thread)."""
        with self._lock:
            found = self._task_launch.get(task_id)
            agent = self._agents.get(found[0]) if found is not None else None
            launch = agent.task_launches.get(found[1]) if agent and found else None
            if agent is None or launch is None:
                return
            if launch.delivered:
                agent.commands.append({"type": "kill_task", "launch_id": launch.id})
                self._wake(agent)
                return
            agent.commands = [c for c in agent.commands if c.get("launch_id") != launch.id]
            del agent.task_launches[launch.id]
            del self._task_launch[task_id]
        threading.Thread(target=self._task_exited, args=(task_id, None, "killed"),
                         daemon=True).start()

    def _carry_tasks(self, old: RemoteAgent, agent: RemoteAgent,
                     running: set) -> List[str]:
        """A re-registering agent keeps its task launches that still run (and their
        queued commands); returns the ids of tasks it lost (lock held)."""
        lost = []
        for launch in old.task_launches.values():
            if launch.delivered and launch.id not in running:
                if self._task_launch.get(launch.task_id, ("", ""))[1] == launch.id:
                    del self._task_launch[launch.task_id]
                    lost.append(launch.task_id)
            else:
                agent.task_launches[launch.id] = launch
        agent.commands += [c for c in old.commands if c.get("launch_id") in agent.task_launches]
        return lost

    def _task_reports(self, agent: RemoteAgent, started: Dict[str, Dict[str, Any]],
                      logs: Dict[str, List[str]], exits: Dict[str, int],
                      reasons: Dict[str, str]) -> List[Tuple[str, str, Any]]:
        """The task callbacks a report asks for, in order (lock held; made after)."""
        calls: List[Tuple[str, str, Any]] = []
        for launch_id, where in started.items():
            launch = agent.task_launches.get(launch_id)
            if launch is not None:
                calls.append(("started", launch.task_id, where))
        for launch_id, lines in logs.items():
            launch = agent.task_launches.get(launch_id)
            if launch is not None and lines:
                calls.append(("logs", launch.task_id, lines))
        for launch_id, code in exits.items():
            launch = agent.task_launches.pop(launch_id, None)
            if launch is None:
                continue
            if self._task_launch.get(launch.task_id, ("", ""))[1] == launch_id:
                del self._task_launch[launch.task_id]
            calls.append(("exited", launch.task_id, (int(code), reasons.get(launch_id))))
        return calls

    def _task_call(self, what: str, task_id: str, value: Any) -> None:
        events = self.task_events
        if events is None:
            return
        try:
            if what == "started":
                port = value.get("port")
                events.task_started(task_id, str(value.get("host") or "127.0.0.1"),
                                    int(port) if port is not None else None)
            elif what == "logs":
                events.task_logs(task_id, list(value))
            else:
                code, reason = value
                events.task_exited(task_id, code, reason)
        except Exception as e:  # a task's bookkeeping must never stop an agent's reports
            logger.warning("handling %s of task %s failed: %s", what, task_id, e)

    def _task_exited(self, task_id: str, code: Optional[int], reason: Optional[str]) -> None:
        if self.task_events is not None:
            try:
                self.task_events.task_exited(task_id, code, reason)
            except Exception as e:
                logger.warning("ending task %s failed: %s", task_id, e)

    def close(self) -> None:
        """Stop watching; agents find the master gone and retry until it is back."""
        self._closed.set()
        with self._lock:
            for agent in self._agents.values():
                self._wake(agent)

    # -- internals -------------------------------------------------------------------

    def _wake(self, agent: RemoteAgent) -> None:
        """Wake the agent's waiting polls (called with the lock held)."""
        agent.wake.set()
        for listener in self.listeners:
            listener(agent.id)

    def _checked(self, agent_id: str, session: str) -> RemoteAgent:
        agent = self._agents.get(agent_id)
        if agent is None or agent.session != session:
            raise UnknownSessionError(
                f"Agent {agent_id!r} is not registered with this session (lost, replaced, "
                "or the master restarted): register again")
        agent.last_seen = time.monotonic()
        return agent

    def _store(self, trial_id: int, lines: List[str]) -> None:
        try:
            self._log_sink(trial_id, lines)
        except Exception as e:  # a log write must never stop an agent's reports
            logger.warning("could not store logs of trial %s: %s", trial_id, e)

    def _lose(self, trial_id: int, why: str) -> None:
        self._store(trial_id, [f"det-master: {why}; the trial counts as crashed"])
        try:
            self._on_lost(trial_id)
        except Exception as e:
            logger.warning("cleaning up lost trial %s failed: %s", trial_id, e)
        self._on_exit(trial_id, LOST_EXIT_CODE)

    def _drop(self, agent: RemoteAgent, why: str) -> None:
        with self._lock:
            trials = []
            parts_ended = [self._part_ended(launch.id, LOST_EXIT_CODE, why=why, lost=True)
                           for launch in agent.launches.values() if launch.id in self._group_of]
            for launch in agent.launches.values():
                if self._trial_launch.get(launch.trial_id, ("", ""))[1] == launch.id:
                    del self._trial_launch[launch.trial_id]
                    trials.append(launch.trial_id)
            agent.launches.clear()
            tasks = [t.task_id for t in agent.task_launches.values()
                     if self._task_launch.get(t.task_id, ("", ""))[1] == t.id]
            for task_id in tasks:
                del self._task_launch[task_id]
            agent.task_launches.clear()
        for trial_id in trials:
            self._lose(trial_id, why)
        self._groups_ended([e for e in parts_ended if e is not None])
        for task_id in tasks:
            self._task_exited(task_id, None, why)
        self._on_change()

    def _watch(self) -> None:
        period = min(0.5, self.timeout / 4.0)
        while not self._closed.wait(period):
            now = time.monotonic()
            with self._lock:
                lost = [a for a in self._agents.values() if now - a.last_seen > self.timeout]
                for agent in lost:
                    del self._agents[agent.id]
                    self._wake(agent)
                overdue = self._sweep_parts(now)
            if overdue:
                self._groups_ended(overdue)
            for agent in lost:
                event("agent %s lost (no request for %.1f s)", agent.id,
                      now - agent.last_seen)
                self._drop(agent, f"agent {agent.id} lost (no contact for "
                                  f"{now - agent.last_seen:.1f} s)")
