"""The master's tasks: commands, notebooks, shells and TensorBoards next to trials.

A task with ``resources.slots`` > 0 joins the master's one scheduling pass
(:meth:`TaskManager.pending`, :meth:`TaskManager.running`, :meth:`TaskManager.claim`)
as a non-preemptible group of its own, so trials and tasks share the slots; a task
with 0 slots (TensorBoard by default) starts at once. Tasks run on the embedded agent,
in a new session each (killing a task kills everything it started), with their
working directory under ``<data_dir>/tasks/<id>/work`` holding the uploaded context.
Services (notebooks, shells, TensorBoards) listen on a loopback port the master picked
and are reached only through the master's proxy (``/proxy/<id>/``).

Locking: ``master.lock`` guards :attr:`TaskManager.live`; processes start and stop
in threads of their own, never with the lock held.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from determined.common.api import unpack_context
from determined.master import scheduler
from determined.master.db._tasks import TaskRecord
from determined.master.tasks._spec import SERVICE_KINDS, bind_mounts, environment_variables

__all__ = ["TaskManager", "LiveTask"]

logger = logging.getLogger("determined.master")

#: The scheduler-task id prefix of tasks (trials use ``trial-``).
PREFIX = "task-"
#: Seconds between SIGTERM and SIGKILL when a task is killed.
KILL_GRACE = 3.0


try:  # Linux: a task process dies with the master (uvicorn may end it by a signal)
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)
except (OSError, ImportError):  # pragma: no cover
    _LIBC = None
_PR_SET_PDEATHSIG = 1


def _die_with_master() -> None:
    """In the child before exec: SIGKILL when the master thread watching it ends."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _link_mounts(config: Dict[str, Any], work: str) -> None:
    """Each ``bind_mounts`` entry as a symbolic link in the working directory ``work``
    to its ``host_path`` (no containers); a clear error naming the mount otherwise."""
    for i, (host, relative) in enumerate(bind_mounts(config)):
        label = f"bind_mounts[{i}] ({host} -> {relative})"
        if not os.path.exists(host):
            raise ValueError(f"{label}: host_path {host} does not exist on this machine")
        path = os.path.join(work, relative)
        if os.path.lexists(path):
            raise ValueError(f"{label}: {relative} already exists in the task's directory "
                             "(from its context); choose another container path")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        root = os.path.realpath(work)
        if not (os.path.realpath(os.path.dirname(path)) + os.sep).startswith(root + os.sep):
            raise ValueError(f"{label}: {relative} leaves the task's directory")
        os.symlink(host, path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclasses.dataclass
class LiveTask:
    """A task that has not terminated (in memory)."""

    id: str
    kind: str
    owner: str
    config: Dict[str, Any]
    arrival: int
    token: str = dataclasses.field(default_factory=lambda: secrets.token_hex(16))
    port: Optional[int] = None
    alloc: Optional[scheduler.Allocation] = None
    proc: Optional[subprocess.Popen] = None
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
            self._signal(task, signal.SIGKILL)

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
        os.makedirs(os.path.join(self.root, task_id), exist_ok=True)
        if extra is not None:
            with open(os.path.join(self.root, task_id, "spec.json"), "w", encoding="utf-8") as f:
                json.dump(extra, f)
        with self.master.lock:
            self._arrival += 1
            task = LiveTask(task_id, kind, owner, config, self._arrival)
            self.live[task_id] = task
            if task.slots == 0:
                self._launch_async(task)
            self.master.changed()
        return record

    def kill(self, task_id: str, reason: str = "killed") -> None:
        """Stop the task (SIGTERM, then SIGKILL); a queued one ends at once."""
        with self.master.lock:
            task = self.live.get(task_id)
            if task is None or task.killed:
                return
            task.killed = reason
            queued = task.proc is None and task.alloc is None and task.slots > 0
            if queued:
                del self.live[task_id]
        if queued:
            self.master.store.update_task(task_id, state="TERMINATED", end_reason=reason)
            return
        self._signal(task, signal.SIGTERM)
        timer = threading.Timer(KILL_GRACE, self._signal, args=(task, signal.SIGKILL))
        timer.daemon = True
        timer.start()

    def _signal(self, task: LiveTask, sig: int) -> None:
        proc = task.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

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

        if len(alloc.parts) != 1 or alloc.parts[0][0] != AGENT_ID:
            return True  # tasks run on the embedded agent only: wait for its slots
        task.alloc = alloc
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
        store = self.master.store
        task_dir = os.path.join(self.root, task.id)
        work = os.path.join(task_dir, "work")
        try:
            os.makedirs(work, exist_ok=True)
            context = store.get_task_context(task.id)
            if context:
                unpack_context(context, work)
            _link_mounts(task.config, work)
            task.port = _free_port() if task.kind in SERVICE_KINDS else None
            argv, env = self._command(task, task_dir, work)
            log = os.path.join(task_dir, "output.log")
            with self.master.lock:
                if task.killed:
                    raise _Killed()
                task.proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                             start_new_session=True,
                                             preexec_fn=_die_with_master)
            with open(os.path.join(task_dir, "pid"), "w", encoding="utf-8") as f:
                f.write(str(task.proc.pid))
            slots = list(task.alloc.parts[0][1]) if task.alloc is not None else []
            from determined.master.resource_managers import AGENT_ID

            store.update_task(task.id, state="RUNNING", agent_id=AGENT_ID, slot_ids=slots)
            task.last_activity = time.monotonic()
            task.ready.set()
            del log
        except _Killed:
            self._ended(task, None)
            return
        except Exception as e:  # a task that cannot start ends with the reason in its log
            logger.warning("task %s could not start: %s", task.id, e)
            try:
                store.add_task_logs(task.id, [f"det-master: the task could not start: {e}"])
            except Exception:
                pass
            self._ended(task, None, f"could not start: {e}")
            return
        self._pump(task)

    def _command(self, task: LiveTask, task_dir: str, work: str
                 ) -> Tuple[List[str], Dict[str, str]]:
        env = dict(os.environ)
        env.update(environment_variables(task.config))
        env.update({"DET_TASK_ID": task.id, "DET_TASK_TYPE": task.kind,
                    "DET_MASTER": self.master.url, "PYTHONUNBUFFERED": "1",
                    "HISTFILE": os.path.join(task_dir, ".history")})
        env.pop("DET_TRIAL_TOKEN", None)
        prefix = f"/proxy/{task.id}"
        py = sys.executable
        if task.kind == "command":
            entry = task.config["entrypoint"]
            argv = ["/bin/sh", "-c", entry[0]] if len(entry) == 1 else list(entry)
        elif task.kind == "shell":
            argv = [py, "-m", "determined.tasks.shell", "--port", str(task.port),
                    "--workdir", work]
        elif task.kind == "tensorboard":
            argv = [py, "-m", "determined.tasks.tensorboard", "--port", str(task.port),
                    "--path-prefix", prefix, "--spec", os.path.join(task_dir, "spec.json"),
                    "--logdir", os.path.join(task_dir, "logdir")]
        elif task.kind == "notebook":
            jupyter = os.path.join(task_dir, "jupyter")
            env.update({"JUPYTER_RUNTIME_DIR": os.path.join(jupyter, "runtime"),
                        "JUPYTER_CONFIG_DIR": os.path.join(jupyter, "config"),
                        "IPYTHONDIR": os.path.join(jupyter, "ipython")})
            argv = [py, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                    f"--port={task.port}", "--ServerApp.port_retries=0",
                    f"--ServerApp.base_url={prefix}/", f"--ServerApp.root_dir={work}",
                    f"--IdentityProvider.token={task.token}",
                    "--ServerApp.allow_origin=*",
                    f"--LabApp.workspaces_dir={os.path.join(jupyter, 'workspaces')}",
                    f"--LabApp.user_settings_dir={os.path.join(jupyter, 'settings')}"]
            if os.geteuid() == 0:  # containers and CI run as root
                argv.append("--allow-root")
        else:  # validated before
            raise ValueError(f"Expected a task kind. Received: {task.kind!r}")
        return argv, env

    def _pump(self, task: LiveTask) -> None:
        """Store the task's output lines (batched) until it exits; then end it."""
        proc = task.proc
        assert proc is not None and proc.stdout is not None
        batch: List[str] = []
        last = time.monotonic()
        lock = threading.Lock()

        def flush() -> None:
            with lock:
                lines = batch[:]
                del batch[:]
            if lines:
                try:
                    self.master.store.add_task_logs(task.id, lines)
                except Exception as e:
                    logger.warning("could not store logs of task %s: %s", task.id, e)

        for raw in proc.stdout:
            with lock:
                batch.append(raw.decode("utf-8", errors="replace").rstrip("\n"))
            if len(batch) >= 200 or time.monotonic() - last > 0.2:
                flush()
                last = time.monotonic()
        flush()
        code = proc.wait()
        self._ended(task, code)

    def _ended(self, task: LiveTask, code: Optional[int], reason: Optional[str] = None) -> None:
        reason = reason or task.killed or ("exited" if code is not None else None)
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
        if task is None or task.port is None or task.proc is None:
            return None
        return task

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
                if timeout and task.proc is not None and not task.killed and \
                        task.in_flight == 0 and now - task.last_activity > timeout:
                    logger.info("task %s idle for %.0f s: killing it", task.id, timeout)
                    self.kill(task.id, reason=f"idle for {timeout:g} s")


class _Killed(Exception):
    pass
