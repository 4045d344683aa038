"""The master's tasks: commands, notebooks, shells and TensorBoards next to trials.

A task with ``resources.slots`` > 0 joins the master's one scheduling pass
(:meth:`TaskManager.pending`, :meth:`TaskManager.running`, :meth:`TaskManager.claim`)
as a non-preemptible group of its own, so trials and tasks share the slots; a task
with 0 slots (TensorBoard by default) starts at once on the embedded agent, else on
the remote agent or Ray node running the fewest tasks (it waits while there is none).

On the embedded agent a task runs under ``<data_dir>/tasks/<id>/work`` holding the
uploaded context; on a remote agent the master sends it (``launch_task``, see
:mod:`determined.master.resource_managers._remote`) and the agent runs it the same
way (:mod:`determined.tasks._launch`), reporting where its service listens, its output
and its exit; a Ray node runs it in an actor (:mod:`determined.master.resource_managers._ray`).
A task whose agent or node is lost ends with ``end_reason`` "... lost".
Services listen on a loopback port (or the remote agent's own address) and are
reached only through the master's proxy (``/proxy/<id>/``).

Locking: ``master.lock`` guards :attr:`TaskManager.live`; processes start and stop
in threads of their own, never with the lock held.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import secrets
import shutil
import signal
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from determined.master import scheduler
from determined.master._lifecycle import event
from determined.master.db._tasks import TaskRecord
from determined.master.tasks._spec import SERVICE_KINDS, bind_mounts, environment_variables
from determined.tasks._launch import TaskProcess, free_port, prepare_dirs, task_command

__all__ = ["TaskManager", "LiveTask"]

logger = logging.getLogger("determined.master")

#: The scheduler-task id prefix of tasks (trials use ``trial-``).
PREFIX = "task-"


@dataclasses.dataclass
class LiveTask:
    """A task that has not terminated (in memory)."""

    id: str
    kind: str
    owner: str
    config: Dict[str, Any]
    arrival: int
    extra: Optional[Dict[str, Any]] = None  # a TensorBoard's runs (spec.json)
    token: str = dataclasses.field(default_factory=lambda: secrets.token_hex(16))
    agent_id: Optional[str] = None  # where it runs, once placed
    host: str = "127.0.0.1"  # where its service listens
    port: Optional[int] = None
    started: bool = False  # its process runs
    alloc: Optional[scheduler.Allocation] = None
    process: Optional[TaskProcess] = None  # on the embedded agent
    launch_id: Optional[str] = None  # on a remote agent
    killed: Optional[str] = None  # why, once asked to stop
    last_activity: float = dataclasses.field(default_factory=time.monotonic)
    in_flight: int = 0  # proxied requests and websockets open now (never idle meanwhile)
    ready: threading.Event = dataclasses.field(default_factory=threading.Event)

    @property
    def slots(self) -> int:
        return int(self.config.get("resources", {}).get("slots", 0))


class TaskManager:
    """Tasks of ``master`` (a :class:`determined.master._core.Master`)."""

    def __init__(self, master: Any):
        self.master = master
        self.live: Dict[str, LiveTask] = {}
        self._arrival = 0
        self._stop = threading.Event()
        self._reaper: Optional[threading.Thread] = None
        self.root = os.path.join(master.config.data_dir, "tasks")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Tasks of an earlier master run are gone (their processes were killed)."""
        self._kill_orphans()
        for task in self.master.store.list_tasks(active_only=True):
            self.master.store.update_task(task.id, state="TERMINATED",
                                          end_reason="the master restarted")
        self._reaper = threading.Thread(target=self._reap, name="det-task-reaper", daemon=True)
        self._reaper.start()

    def close(self) -> None:
        self._stop.set()
        with self.master.lock:
            tasks = list(self.live.values())
        for task in tasks:
            if task.process is not None:
                task.process.signal(signal.SIGKILL)

    def _kill_orphans(self) -> None:
        if not os.path.isdir(self.root):
            return
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name, "pid")
            try:
                with open(path, encoding="utf-8") as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/environ", "rb") as f:
                    ours = f"DET_TASK_ID={name}".encode() in f.read()
                if ours:
                    os.killpg(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass

    # ------------------------------------------------------------------ create, kill

    def create(self, kind: str, owner: str, config: Dict[str, Any],
               context: Optional[bytes], extra: Optional[Dict[str, Any]] = None) -> TaskRecord:
        """Store a task and queue it (or start it, with 0 slots). ``extra`` is written
        to the task's directory as ``spec.json`` (a TensorBoard's runs)."""
        task_id = secrets.token_hex(4)
        record = self.master.store.create_task(task_id, kind, owner, config, context,
                                               description=config.get("description") or "")
        event("task %s (%s) created by %s", task_id, kind, owner)
        with self.master.lock:
            self._arrival += 1
            task = LiveTask(task_id, kind, owner, config, self._arrival, extra=extra)
            self.live[task_id] = task
            self.place_unslotted()
            self.master.changed()
        return record

    def place_unslotted(self) -> None:
        """Start tasks without slots (TensorBoards) that wait for an agent: on the
        embedded one, else on the remote agent running the fewest tasks whose label
        fits (master lock held; each scheduling pass calls it)."""
        from determined.master.resource_managers import AGENT_ID

        waiting = [t for t in self.live.values()
                   if t.slots == 0 and t.agent_id is None and not t.killed]
        if not waiting:
            return
        rm = self.master.rm
        load: Dict[str, int] = {}
        for t in self.live.values():
            if t.agent_id is not None:
                load[t.agent_id] = load.get(t.agent_id, 0) + 1
        agents = [a for a in rm.agents() if a.enabled and (
            a.id == AGENT_ID if rm.embedded is not None else rm.runs_tasks(a.id))]
        for task in waiting:
            label = str(task.config.get("resources", {}).get("agent_label") or "")
            fits = [a for a in agents if not label or a.label == label]
            if not fits:
                continue
            agent = min(fits, key=lambda a: (load.get(a.id, 0), a.id))
            load[agent.id] = load.get(agent.id, 0) + 1
            task.agent_id = agent.id
            self._launch_async(task)

    def kill(self, task_id: str, reason: str = "killed") -> None:
        """Stop the task (SIGTERM, then SIGKILL); a queued one ends at once."""
        with self.master.lock:
            task = self.live.get(task_id)
            if task is None or task.killed:
                return
            task.killed = reason
            queued = task.agent_id is None
            if queued:
                del self.live[task_id]
            launch_id, process = task.launch_id, task.process
        if queued:
            self.master.store.update_task(task_id, state="TERMINATED", end_reason=reason)
            with self.master.lock:  # changed() notifies a condition on this lock
                self.master.changed()
        elif launch_id is not None:
            self.master.rm.kill_task(task_id)
        elif process is not None:
            process.stop()
        # else: its launch is under way and sees ``killed``

    # ------------------------------------------------------------------ scheduling seam

    def pending(self) -> List[scheduler.Task]:
        """Queued tasks needing slots, for the scheduling pass (master lock held)."""
        return [self._sched_task(t) for t in self.live.values()
                if t.slots > 0 and t.alloc is None and not t.killed]

    def running(self) -> Dict[str, Tuple[scheduler.Task, scheduler.Allocation]]:
        """Tasks holding slots, in start order (master lock held)."""
        held = [t for t in self.live.values() if t.alloc is not None]
        held.sort(key=lambda t: t.arrival)
        return {PREFIX + t.id: (self._sched_task(t), t.alloc) for t in held
                if t.alloc is not None}

    def claim(self, alloc: scheduler.Allocation) -> bool:
        """Start the task ``alloc`` is for; False if it is not a task (master lock held)."""
        if not alloc.task_id.startswith(PREFIX):
            return False
        task = self.live.get(alloc.task_id[len(PREFIX):])
        if task is None or task.killed:
            return True
        from determined.master.resource_managers import AGENT_ID

        agent_id = alloc.parts[0][0]
        if len(alloc.parts) != 1 or not (agent_id == AGENT_ID or
                                         self.master.rm.runs_tasks(agent_id)):
            return True  # a task runs on one agent or node: wait for its slots there
        task.alloc, task.agent_id = alloc, agent_id
        self._launch_async(task)
        return True

    def _sched_task(self, t: LiveTask) -> scheduler.Task:
        resources = t.config.get("resources", {})
        return scheduler.Task(PREFIX + t.id, PREFIX + t.id, t.slots, arrival=-1_000_000 + t.arrival,
                              weight=float(resources.get("weight") or 1.0),
                              priority=resources.get("priority"),
                              agent_label=str(resources.get("agent_label") or ""),
                              preemptible=False)

    # ------------------------------------------------------------------ processes

    def _launch_async(self, task: LiveTask) -> None:
        threading.Thread(target=self._launch, args=(task,), name=f"det-task-{task.id}",
                         daemon=True).start()

    def _launch(self, task: LiveTask) -> None:
        from determined.master.resource_managers import AGENT_ID

        store = self.master.store
        try:
            context = store.get_task_context(task.id)
            if task.agent_id != AGENT_ID:
                self._launch_remote(task, context)
                return
            task_dir = os.path.join(self.root, task.id)
            work = prepare_dirs(task_dir, context, task.extra, bind_mounts(task.config))
            port = free_port() if task.kind in SERVICE_KINDS else None
            argv, env = task_command(task.kind, task.config, task.id, task_dir, "127.0.0.1",
                                     port, task.token, self.master.url,
                                     environment_variables(task.config))
            with self.master.lock:
                if task.killed:
                    raise _Killed()
                task.process = TaskProcess(argv, env, work)
            with open(os.path.join(task_dir, "pid"), "w", encoding="utf-8") as f:
                f.write(str(task.process.pid))
            self.task_started(task.id, "127.0.0.1", port)
        except _Killed:
            self._ended(task, None)
            return
        except Exception as e:  # a task that cannot start ends with the reason in its log
            logger.warning("task %s could not start: %s", task.id, e)
            self.task_logs(task.id, [f"det-master: the task could not start: {e}"])
            self._ended(task, None, f"could not start: {e}")
            return
        self._ended(task, task.process.pump(lambda lines: self.task_logs(task.id, lines)))

    def _launch_remote(self, task: LiveTask, context: Optional[bytes]) -> None:
        """Send the task to its remote agent or Ray node; their reports do the rest."""
        slots = list(task.alloc.parts[0][1]) if task.alloc is not None else []
        command = {"task_id": task.id, "kind": task.kind, "config": task.config,
                   "token": task.token,
                   "env": environment_variables(task.config), "slot_ids": slots,
                   "context": base64.b64encode(context).decode("ascii") if context else None,
                   "mounts": bind_mounts(task.config),
                   "spec": task.extra, "master_url": self.master.url}
        with self.master.lock:
            if task.killed:
                raise _Killed()
            assert task.agent_id is not None
            task.launch_id = self.master.rm.launch_task(task.agent_id, task.id, command)
        self.master.store.update_task(task.id, agent_id=task.agent_id, slot_ids=slots)

    # ------------------------------------------------------------------ what tasks report

    def task_started(self, task_id: str, host: str, port: Optional[int]) -> None:
        """The task's process runs (its service, if any, on ``host:port``)."""
        with self.master.lock:
            task = self.live.get(task_id)
        if task is None:
            return
        if host in ("", "0.0.0.0", "::") or (port is not None and not 0 < port < 65536):
            self.task_logs(task_id, [f"det-master: refusing the service address "
                                     f"{host}:{port} the agent reported"])
            port = None
        slots = list(task.alloc.parts[0][1]) if task.alloc is not None else []
        task.host, task.port = host, port
        self.master.store.update_task(task_id, state="RUNNING", agent_id=task.agent_id,
                                      slot_ids=slots)
        event("task %s (%s) RUNNING on %s", task_id, task.kind, task.agent_id)
        task.last_activity = time.monotonic()
        task.started = True
        task.ready.set()

    def task_logs(self, task_id: str, lines: List[str]) -> None:
        try:
            self.master.store.add_task_logs(task_id, lines)
        except Exception as e:
            logger.warning("could not store logs of task %s: %s", task_id, e)

    def task_exited(self, task_id: str, code: Optional[int], reason: Optional[str]) -> None:
        """The task ended (``code`` None: it never ran, or its agent was lost)."""
        with self.master.lock:
            task = self.live.get(task_id)
        if task is None:
            return
        if reason and not task.killed:
            self.task_logs(task_id, [f"det-master: {reason}; the task ended"])
        self._ended(task, code, None if task.killed else reason)

    def _ended(self, task: LiveTask, code: Optional[int], reason: Optional[str] = None) -> None:
        reason = reason or task.killed or ("exited" if code is not None else None)
        event("task %s (%s) TERMINATED: %s%s", task.id, task.kind, reason,
              f" (exit code {code})" if code is not None else "")
        try:
            self.master.store.update_task(task.id, state="TERMINATED", exit_code=code,
                                          end_reason=reason)
        except Exception as e:
            logger.warning("could not end task %s: %s", task.id, e)
        with self.master.lock:
            self.live.pop(task.id, None)
            task.ready.set()
            self.master.changed()
        try:
            os.remove(os.path.join(self.root, task.id, "pid"))
        except OSError:
            pass
        shutil.rmtree(os.path.join(self.root, task.id, "logdir"), ignore_errors=True)

    # ------------------------------------------------------------------ proxy and idleness

    def target(self, task_id: str) -> Optional[LiveTask]:
        """The live service task ``task_id`` if it runs (for the proxy)."""
        with self.master.lock:
            task = self.live.get(task_id)
        if task is None or task.port is None or not task.started:
            return None
        return task

    def tensorboards_showing(self, experiment_id: int) -> List[Tuple[str, bool]]:
        """``(task id, stopping)`` of the live TensorBoard tasks (queued, running, or
        killed but not yet ended: one still starting would make its links again) showing
        trials of the experiment."""
        with self.master.lock:
            return sorted((t.id, t.killed) for t in self.live.values()
                          if t.kind == "tensorboard" and any(
                              r.get("experiment_id") == experiment_id
                              for r in (t.extra or {}).get("runs", ())))

    def kind_of(self, task_id: str) -> Optional[str]:
        """The kind of live task ``task_id`` (command, notebook, ...), None once it ended."""
        with self.master.lock:
            task = self.live.get(task_id)
        return task.kind if task is not None else None

    def touch(self, task_id: str) -> None:
        """The proxy forwarded something: the task is not idle."""
        task = self.live.get(task_id)
        if task is not None:
            task.last_activity = time.monotonic()

    def opened(self, task_id: str) -> None:
        """The proxy started forwarding a request or a websocket to the task."""
        with self.master.lock:
            task = self.live.get(task_id)
            if task is not None:
                task.in_flight += 1
                task.last_activity = time.monotonic()

    def closed(self, task_id: str) -> None:
        """A request or websocket :meth:`opened` for the task has ended."""
        with self.master.lock:
            task = self.live.get(task_id)
            if task is not None:
                task.in_flight = max(0, task.in_flight - 1)
                task.last_activity = time.monotonic()

    def idle_timeout(self, task: LiveTask) -> Optional[float]:
        own = task.config.get("idle_timeout")
        if own is not None:
            return float(own)
        if task.kind == "tensorboard":
            return getattr(self.master.config, "tensorboard_timeout", 300.0)
        if task.kind == "notebook":
            return getattr(self.master.config, "notebook_timeout", None)
        return None

    def _reap(self) -> None:
        while not self._stop.wait(1.0):
            now = time.monotonic()
            with self.master.lock:
                tasks = list(self.live.values())
            for task in tasks:
                timeout = self.idle_timeout(task)
                # A slow answer (a loaded TensorBoard reading its event files) is
                # activity: the idle clock runs only between requests.
                if timeout and task.started and not task.killed and \
                        task.in_flight == 0 and now - task.last_activity > timeout:
                    logger.info("task %s idle for %.0f s: killing it", task.id, timeout)
                    self.kill(task.id, reason=f"idle for {timeout:g} s")


class _Killed(Exception):
    pass
