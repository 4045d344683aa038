"""A remote agent: offers this machine's slots to a master and runs the trials it sends.

The agent registers (slots, label), then long-polls the master for commands; each poll
is also its heartbeat (the master's side: ``determined.master.resource_managers._remote``).
``launch`` fetches the experiment's model definition once (cached in the work dir),
writes the trial's spec file and forks the trial runner from a zygote
(:class:`~determined._procs.Spawner`, as the embedded agent does); ``kill`` SIGKILLs a
trial's process group. The trials' output lines go to the master in batches, each
trial's exit code after its last lines (once it exited: a child it left behind holding
its output open is killed, not waited for). ``launch_part`` starts this agent's ranks of a
trial spanning agents (:meth:`Agent._launch_part`).

Tasks (``launch_task``: commands, notebooks, shells, TensorBoards) run as on the
master's embedded agent (:mod:`determined.tasks._launch`) in ``<work-dir>/tasks/<id>``;
a service listens on this agent's address towards the master (``--address``), which
the agent reports (``started``) so the master's proxy can reach it. ``kill_task`` stops
one (SIGTERM, then SIGKILL).

If the master is unreachable the agent retries with backoff and keeps its trials
running (they retry their own requests); when it is back, the agent registers again
and names the trials it still runs. On SIGTERM it kills its trials, reports their
exits and deregisters.
"""

from __future__ import annotations

import compileall
import json
import logging
import os
import queue
import shutil
import signal
import socket
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from determined.agent._parts import interface_env
from determined._procs import ExitCodes, Spawner, follow_spawned
from determined._procs._gpu_metrics import DEFAULT_INTERVAL, GpuSampler, samples_by_owner
from determined._procs._gpus import (Gpu, check_memory_fraction, check_slots_per_gpu,
                                    detect_gpus, gpu_inventory, shared_gpu_note, slot_gpus,
                                    trial_gpu_env)
from determined._version import AGENT_PROTOCOL, __version__, agent_skew_message
from determined.common.api import APIError, MasterClient, unpack_context
from determined.launch._machines import chief_port, part_env, part_processes, script_rendezvous
from determined.tasks._launch import TaskProcess, task_from_command

__all__ = ["Agent", "detect_gpus", "default_work_dir"]

logger = logging.getLogger("determined.agent")

#: Most lines kept while the master is unreachable (older ones are dropped).
MAX_PENDING_LINES = 100_000
_MAX_BACKOFF = 10.0


def _say(message: str, level: int = logging.INFO) -> None:
    """One line of the agent's own log (``12:04:31 INFO det-agent: ...``: the format of
    every process serving the cluster, common/log_format.py; ``python -m
    determined.agent`` sends warnings and errors to stderr, the rest to stdout)."""
    logger.log(level, message)


def default_work_dir(agent_id: str) -> str:
    return os.path.join(os.path.expanduser("~"), ".determined", "agent", agent_id)


class _Trial:
    def __init__(self, launch_id: str, trial_id: int):
        self.launch_id = launch_id
        self.trial_id = trial_id
        self.pid: Optional[int] = None
        self.killed = False
        self.gpus: List[str] = []  # NVML indices of its GPUs, once it runs


class _Part(_Trial):
    """This agent's ranks of a trial spanning agents: one process per slot."""

    def __init__(self, launch_id: str, trial_id: int):
        super().__init__(launch_id, trial_id)
        self.pids: List[int] = []


class _Task:
    def __init__(self, launch_id: str, task_id: str):
        self.launch_id = launch_id
        self.task_id = task_id
        self.process: Optional[TaskProcess] = None
        self.killed = False
        self.end_reason: Optional[str] = None  # set when the agent itself ends it


def route_address(master_url: str) -> str:
    """This machine's address on the route to the master (loopback for a local one)."""
    from urllib.parse import urlsplit

    host = urlsplit(master_url if "://" in master_url else f"http://{master_url}").hostname
    try:
        infos = socket.getaddrinfo(host or "127.0.0.1", 9, type=socket.SOCK_DGRAM)
        family, _, _, _, addr = infos[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(addr)  # no packet is sent
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


class Agent:
    """One agent process's state and threads.

    Args:
        master: the master's URL (``host:port`` works too).
        slots: CPU slots to offer (default: the CPU count). With NVIDIA GPUs there is
            one slot per GPU; ``slots`` then uses only the first ``slots`` GPUs.
        agent_id: unique in the cluster (default: the host name).
        label: only experiments with this ``resources.agent_label`` (or none) run here.
        work_dir: model definitions and trial spec files (default
            ``~/.determined/agent/<id>``).
        token: the master's ``security.agent_token``, if it sets one.
        gpus: the GPUs (default: :func:`gpu_inventory`; ``[]``: none).
        slots_per_gpu: slots offered per GPU (trials sharing a GPU each get a memory cap).
        gpu_memory_fraction: each slot's cap, a fraction of its GPU's memory (default
            ``1 / slots_per_gpu``; no cap with one slot per GPU).
        gpu_metrics_interval: seconds between readings of the GPUs trials run on.
        address: this machine's address as the master and other agents reach it: task
            services listen there and ranks of trials spanning agents rendezvous there
            (default: this machine's address on the route to the master; never a wildcard).
    """

    def __init__(self, master: str, slots: Optional[int] = None, agent_id: Optional[str] = None,
                 label: str = "", work_dir: Optional[str] = None, token: Optional[str] = None,
                 gpus: Optional[Sequence[Gpu]] = None, preload: Optional[List[str]] = None,
                 address: Optional[str] = None, slots_per_gpu: int = 1,
                 gpu_memory_fraction: Optional[float] = None,
                 gpu_metrics_interval: float = DEFAULT_INTERVAL):
        self.id = agent_id or socket.gethostname()
        if not self.id or any(c.isspace() for c in self.id):
            raise ValueError(f"Expected --id to be a name without spaces. Received: {self.id!r}")
        if slots is not None and slots < 1:
            raise ValueError(f"Expected --slots to be >= 1. Received: --slots {slots}")
        self.slots_per_gpu = check_slots_per_gpu(slots_per_gpu, "--slots-per-gpu")
        self.gpu_memory_fraction = check_memory_fraction(gpu_memory_fraction,
                                                         "--gpu-memory-fraction")
        if not gpu_metrics_interval > 0:
            raise ValueError("Expected --gpu-metrics-interval to be > 0 seconds. "
                             f"Received: {gpu_metrics_interval!r}")
        by_slot = slot_gpus(gpu_inventory() if gpus is None else gpus, slots_per_gpu)
        if by_slot:
            if slots is not None and slots > len(by_slot):
                raise ValueError(f"Expected --slots <= {len(by_slot)}, the GPUs NVML lists "
                                 f"times --slots-per-gpu. Received: --slots {slots}")
            by_slot = by_slot[:slots] if slots is not None else by_slot
            self.slots = len(by_slot)
        else:
            self.slots = slots if slots is not None else (os.cpu_count() or 1)
        #: The GPU of each slot ([] on a machine without GPUs).
        self.gpus: List[Gpu] = by_slot
        self._sampler = GpuSampler(gpu_metrics_interval, self._busy_gpus, self._file_samples)
        self.label = label
        self.work_dir = os.path.abspath(os.path.expanduser(work_dir or default_work_dir(self.id)))
        self.token = token
        self.master_url = master
        if address in ("0.0.0.0", "::"):
            raise ValueError("Expected --address to be this machine's address, not a wildcard "
                             f"(services must not listen on every interface). Received: "
                             f"{address}")
        self.address = address or route_address(master)
        self._tasks: Dict[str, _Task] = {}  # launch id -> task, until its exit is shipped
        self._poller = MasterClient(master, token=token)
        self._shipper_client = MasterClient(master, token=token)
        self._fetcher = MasterClient(master)  # model definitions: with each trial's token
        self._lock = threading.Lock()  # guards _trials and the session
        self._trials: Dict[str, _Trial] = {}  # launch id -> trial, until its exit is shipped
        self._session: Optional[str] = None
        self._registered = False
        self._poll_seconds = 10.0
        self._cluster_id = "cluster"
        self._model_locks: Dict[int, threading.Lock] = {}
        self._exits = ExitCodes()
        self._events: "queue.Queue[Tuple[str, str, Any]]" = queue.Queue()
        self._stop = threading.Event()  # SIGTERM: drain (no new trials), then deregister
        self._done = threading.Event()  # deregistered: stop polling
        self._fatal: Optional[str] = None
        self._spawner = Spawner(self._exits.report, preload=preload)

    # -- lifecycle ---------------------------------------------------------------------

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT (or a refusal by the master); the exit status."""
        os.makedirs(self.work_dir, exist_ok=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())
        shipper = threading.Thread(target=self._ship, name="det-agent-shipper", daemon=True)
        shipper.start()
        poller = threading.Thread(target=self._poll_loop, name="det-agent-poller", daemon=True)
        poller.start()
        if self.gpus:
            self._sampler.start()
        while not self._stop.wait(0.5):
            pass
        try:
            self._shutdown()
        finally:
            self._done.set()
            for client in (self._poller, self._shipper_client, self._fetcher):
                client.close()
        if self._fatal:
            _say(f"det-agent: {self._fatal}", logging.ERROR)
            return 2
        return 0

    def stop(self) -> None:
        """Ask :meth:`run` to shut down (as SIGTERM does)."""
        self._stop.set()

    def _warm_up(self) -> None:
        try:
            self._spawner.start()
        except Exception as e:  # the first launch retries and reports
            _say(f"det-agent: could not start the trial zygote: {e}", logging.WARNING)

    def _shutdown(self) -> None:
        with self._lock:
            session = self._session
        if session is not None and self._fatal is None:
            try:  # drain first: the master must not send trials we would kill
                with MasterClient(self.master_url, token=self.token, timeout=5.0) as client:
                    for command in client.request(
                            "GET", f"/agents/{self.id}/commands",
                            params={"session": session, "wait": 0, "draining": True},
                    )["commands"]:
                        self._handle(command)
            except APIError as e:
                _say(f"det-agent: could not tell the master it drains: {e}", logging.WARNING)
        with self._lock:
            trials = list(self._trials.values())
            tasks = list(self._tasks.values())
        _say(f"det-agent: {self.id} shutting down; killing {len(trials)} trial(s) and "
             f"{len(tasks)} task(s)")
        for t in trials:
            self._kill(t)
        for task in tasks:
            self._events.put(("lines", task.launch_id, [f"det-agent {self.id}: shutting down; "
                                                        f"killing task {task.task_id}"]))
            task.end_reason = f"agent {self.id} shut down"
            self._kill_task(task, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # let the shipper report their exits
            with self._lock:
                if not (self._trials or self._tasks) or self._session is None:
                    break
            time.sleep(0.1)
        with self._lock:
            session = self._session
        if session is not None and self._fatal is None:
            try:
                with MasterClient(self.master_url, token=self.token, timeout=5.0) as client:
                    client.request("POST", f"/agents/{self.id}/deregister",
                                   json={"session": session})
                _say(f"det-agent: {self.id} deregistered")
            except APIError as e:
                _say(f"det-agent: could not deregister: {e}", logging.WARNING)
        elif session is None and self._fatal is None:  # a refusal says why itself
            _say(f"det-agent: {self.id} is not registered (master unreachable?); "
                  "not deregistering")
        self._sampler.stop()
        self._spawner.close()

    def _refuse(self, why: str) -> None:
        self._fatal = why
        self._stop.set()

    # -- talking to the master ------------------------------------------------------------

    def _register(self) -> None:
        info: Optional[Dict[str, Any]] = None
        try:
            info = self._poller.get_master()
            self._cluster_id = str(info.get("cluster_id") or self._cluster_id)
        except APIError:
            pass  # registering tells whether the master is there
        if info is not None and info.get("agent_protocol", 0) != AGENT_PROTOCOL:
            # A master from before would reject this agent's registration as malformed.
            self._refuse(agent_skew_message(self.id, __version__, AGENT_PROTOCOL,
                                            str(info.get("version") or ""),
                                            int(info.get("agent_protocol") or 0)))
            return
        with self._lock:
            running = list(self._trials) + list(self._tasks)
        answer = self._poller.request("POST", f"/agents/{self.id}/register", json={
            "slots": self.slots, "label": self.label, "running": running,
            "version": __version__, "protocol": AGENT_PROTOCOL,
            "slot_gpus": [g.to_json() for g in self.gpus]})
        with self._lock:
            first = self._session is None and not self._registered
            self._registered = True
            self._session = answer["session"]
            self._poll_seconds = float(answer.get("poll_seconds", 10.0))
        if first:  # import the frameworks in the zygote now, not at the first trial
            threading.Thread(target=self._warm_up, name="det-zygote-start", daemon=True).start()
        shared = f" ({self.slots_per_gpu} per GPU)" if self.gpus and self.slots_per_gpu > 1 else ""
        _say(f"det-agent: {self.id} registered with {self.master_url}: {self.slots} "
              f"{'GPU' if self.gpus else 'CPU'} slot(s){shared}")

    def _poll_loop(self) -> None:
        backoff = 0.5
        outage = False
        # After SIGTERM it goes on polling (a heartbeat, and "draining": the master sends
        # no more trials) until the trials' exits are reported and it deregistered.
        while not self._done.is_set():
            try:
                with self._lock:
                    session = self._session
                draining = self._stop.is_set()
                if session is None:
                    if draining or self._fatal:
                        self._done.wait(0.2)
                    else:
                        self._register()
                    continue
                wait = 0.5 if draining else self._poll_seconds
                commands = self._poller.request(
                    "GET", f"/agents/{self.id}/commands",
                    params={"session": session, "wait": wait, "draining": draining},
                    timeout=wait + 30.0,
                )["commands"]
                if outage:
                    _say("det-agent: the master is reachable again")
                backoff, outage = 0.5, False
                for command in commands:
                    self._handle(command)
            except APIError as e:
                if e.status == 410:  # lost, replaced or a restarted master: register again
                    with self._lock:
                        self._session = None
                    continue
                if e.status in (400, 401, 403):
                    self._refuse(f"the master refused agent {self.id}: {e}")
                    return
                if self._stop.is_set():
                    self._done.wait(0.2)
                    continue
                if not outage:
                    _say(f"det-agent: {e}; retrying (trials keep running)", logging.WARNING)
                outage = True
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
            except Exception as e:  # never let the heartbeat die
                if self._done.is_set():
                    return
                _say(f"det-agent: poll failed: {type(e).__name__}: {e}", logging.WARNING)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    def _handle(self, command: Dict[str, Any]) -> None:
        kind = command.get("type")
        if kind == "launch":
            t = _Trial(command["launch_id"], int(command["trial_id"]))
            with self._lock:
                self._trials[t.launch_id] = t  # named in "running" from now on
            if self._stop.is_set():  # sent before the master knew we are draining
                self._log(t, f"det-agent {self.id}: shutting down; trial {t.trial_id} "
                             "not started")
                self._events.put(("exit", t.launch_id, 0))  # as if stopped: no restart
                return
            threading.Thread(target=self._launch, args=(t, command),
                             name=f"det-launch-{t.trial_id}", daemon=True).start()
        elif kind == "launch_part":
            part = _Part(command["launch_id"], int(command["trial_id"]))
            with self._lock:
                self._trials[part.launch_id] = part
            if self._stop.is_set():  # its trial's other parts must not wait for it
                self._log(part, f"det-agent {self.id}: shutting down; ranks of trial "
                                f"{part.trial_id} not started")
                self._events.put(("exit", part.launch_id, -9))
                return
            threading.Thread(target=self._launch_part, args=(part, command),
                             name=f"det-part-{part.trial_id}", daemon=True).start()
        elif kind == "kill":
            with self._lock:
                t = self._trials.get(command.get("launch_id", ""))
                task = self._tasks.get(command.get("launch_id", ""))
            if t is not None:
                self._kill(t)
            if task is not None:
                self._kill_task(task, signal.SIGKILL)
        elif kind == "launch_task":
            self._handle_launch_task(command)
        elif kind == "kill_task":
            with self._lock:
                task = self._tasks.get(command.get("launch_id", ""))
            if task is not None:
                self._kill_task(task, signal.SIGTERM)
        else:
            _say(f"det-agent: ignoring unknown command {kind!r}", logging.WARNING)

    def _ship(self) -> None:
        """Send output lines and exits in batches, in order; retry until the master has them."""
        logs: Dict[str, List[str]] = {}
        exits: Dict[str, int] = {}
        started: Dict[str, Dict[str, Any]] = {}
        reasons: Dict[str, str] = {}
        gpu: Dict[str, List[Dict[str, Any]]] = {}
        pending = 0
        backoff = 0.5
        while True:
            try:
                item = self._events.get(timeout=0.2 if (logs or exits) else 1.0)
            except queue.Empty:
                item = None
            deadline = time.monotonic() + 0.1
            while item is not None:
                kind, launch_id, value = item
                if kind == "lines":
                    logs.setdefault(launch_id, []).extend(value)
                    pending += len(value)
                elif kind == "started":
                    started[launch_id] = value
                    deadline = 0.0
                elif kind == "gpu":
                    gpu.setdefault(launch_id, []).extend(value)
                else:
                    exits[launch_id] = value
                    with self._lock:
                        task = self._tasks.get(launch_id)
                    if task is not None and task.end_reason:
                        reasons[launch_id] = task.end_reason
                    deadline = 0.0  # an exit: send it now
                if pending > MAX_PENDING_LINES:
                    pending -= self._drop_oldest(logs)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = self._events.get(timeout=remaining)
                except queue.Empty:
                    item = None
            with self._lock:
                session = self._session
            if not (logs or exits or started or gpu) or session is None:
                continue
            body: Dict[str, Any] = {"session": session, "logs": logs, "exits": exits}
            if started:
                body["started"] = started
            if reasons:
                body["reasons"] = reasons
            if gpu:
                body["gpu_metrics"] = gpu
            try:
                self._shipper_client.request("POST", f"/agents/{self.id}/events", json=body,
                                             timeout=30.0)
            except APIError as e:
                if e.status in (400, 401, 403):  # retrying would not help: drop them
                    _say(f"det-agent: the master refused trial output: {e}", logging.WARNING)
                    with self._lock:
                        for launch_id in exits:
                            self._trials.pop(launch_id, None)
                            self._tasks.pop(launch_id, None)
                    logs, exits, started, reasons, gpu, pending = {}, {}, {}, {}, {}, 0
                    continue
                if e.status == 410:
                    with self._lock:  # the poller registers again
                        if self._session == session:
                            self._session = None
                time.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            backoff = 0.5
            with self._lock:
                for launch_id in exits:
                    self._trials.pop(launch_id, None)
                    self._tasks.pop(launch_id, None)
            logs, exits, started, reasons, gpu, pending = {}, {}, {}, {}, {}, 0

    @staticmethod
    def _drop_oldest(logs: Dict[str, List[str]]) -> int:
        biggest = max(logs, key=lambda k: len(logs[k]))
        n = len(logs[biggest]) // 2
        if n < 2:
            return 0
        logs[biggest][:n] = [f"det-agent: {n} lines dropped (the master was unreachable)"]
        return n - 1

    # -- trials ------------------------------------------------------------------------

    def _log(self, t: _Trial, line: str) -> None:
        self._events.put(("lines", t.launch_id, [line]))

    def _follow(self, launch_id: str, pid: int, out_fd: int, prefix: str = "") -> int:
        """Queue a spawned process's output in batches of lines until it exited; its
        exit code."""
        return follow_spawned(pid, out_fd, self._exits,
                              lambda lines: self._events.put(("lines", launch_id, lines)),
                              max_age=0.1, prefix=prefix)

    def _write_spec(self, t: _Trial, command: Dict[str, Any], token: str,
                    rendezvous: Optional[Dict[str, Any]] = None) -> Tuple[str, str]:
        """Fetch the trial's model definition and write its spec (this agent's model
        directory and threads; a script trial's machines: ``rendezvous``); returns the
        model directory and the spec's path."""
        model_dir = self._model_def(int(command["experiment_id"]), token)
        spec = dict(command["spec"])
        if rendezvous is not None:
            spec["rendezvous"] = rendezvous
        spec["env"] = dict(spec["env"], model_dir=model_dir)
        spec["threads"] = max(1, (os.cpu_count() or 1) // self.slots)
        trial_dir = os.path.join(self.work_dir, "trials", str(t.trial_id))
        os.makedirs(trial_dir, exist_ok=True)
        spec_path = os.path.join(trial_dir, f"spec-{t.launch_id}.json")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        return model_dir, spec_path

    def _launch(self, t: _Trial, command: Dict[str, Any]) -> None:
        env_in = dict(command.get("env") or {})
        try:
            slot_ids = [int(s) for s in command.get("slot_ids") or []]
            self._log(t, f"det-agent {self.id}: starting trial {t.trial_id} on slot(s) "
                         f"{','.join(map(str, slot_ids))} (launch {t.launch_id})")
            model_dir, spec_path = self._write_spec(t, command, env_in["DET_TRIAL_TOKEN"])
            env = {"DET_MASTER": self._poller.url, "DET_TRIAL_TOKEN": env_in["DET_TRIAL_TOKEN"],
                   "DET_TRIAL_SPEC": spec_path, "DET_AGENT_ID": self.id,
                   "DET_SLOT_IDS": ",".join(map(str, slot_ids))}
            env.update(self._gpu_env(t, slot_ids))
            with self._lock:
                if t.killed:
                    raise _Killed()
            # Not under the lock: the first spawn may wait for the zygote's imports.
            pid, out_fd = self._spawner.spawn(env, model_dir)
            with self._lock:
                t.pid = pid
                killed = t.killed
            if killed:  # killed while it was being spawned
                self._kill(t)
        except _Killed:
            self._log(t, f"det-agent {self.id}: trial {t.trial_id} killed before it started")
            self._events.put(("exit", t.launch_id, -9))
            return
        except Exception as e:
            self._log(t, f"det-agent {self.id}: could not start trial {t.trial_id}: "
                         f"{type(e).__name__}: {e}")
            self._events.put(("exit", t.launch_id, 1))
            return
        self._events.put(("exit", t.launch_id, self._follow(t.launch_id, pid, out_fd)))

    def _gpu_env(self, t: _Trial, slot_ids: List[int]) -> Dict[str, str]:
        """The trial's GPUs and memory cap (:func:`trial_gpu_env`); notes its GPUs for
        the metrics and says in its log which GPU it shares."""
        env = trial_gpu_env(self.gpus, slot_ids, self.slots_per_gpu, self.gpu_memory_fraction)
        if env:
            with self._lock:
                t.gpus = env["CUDA_VISIBLE_DEVICES"].split(",")
            note = shared_gpu_note(env)
            if note is not None:
                self._log(t, f"det-agent {self.id}: {note}")
        return env

    def _busy_gpus(self) -> List[str]:
        with self._lock:
            return sorted({g for t in self._trials.values() for g in t.gpus})

    def _file_samples(self, samples: List[Dict[str, Any]]) -> None:
        with self._lock:
            owners = {launch_id: list(t.gpus) for launch_id, t in self._trials.items()}
        for launch_id, mine in samples_by_owner(samples, owners).items():
            self._events.put(("gpu", launch_id, mine))

    def _kill(self, t: _Trial) -> None:
        with self._lock:
            t.killed = True
            pids = list(t.pids) if isinstance(t, _Part) else [t.pid]
        for pid in pids:
            if pid is None:
                continue
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _launch_part(self, t: _Part, command: Dict[str, Any]) -> None:
        """Start this agent's ranks of a trial spanning agents: one process per slot, or
        one for a script trial's part (see :mod:`determined.launch._machines`). The
        part's exit code is its first failing process's (the others are killed then),
        else 0."""
        ranks = dict(command["ranks"])
        slot_ids = [int(s) for s in command.get("slot_ids") or []]
        first, size = int(ranks["first"]), int(ranks["size"])
        from determined.config import is_script_entrypoint  # not at import: 0.1 s

        script = is_script_entrypoint(
            (command["spec"].get("env") or {}).get("experiment_config", {}).get("entrypoint"))
        results: "queue.Queue[int]" = queue.Queue()
        started = 0
        failure: Optional[int] = None
        try:
            last = first + len(slot_ids) - 1
            which = f"rank {first}" if last == first else f"ranks {first}-{last}"
            self._log(t, f"det-agent {self.id}: starting {which} of {size} of trial "
                         f"{t.trial_id} on slot(s) {','.join(map(str, slot_ids))} "
                         f"(launch {t.launch_id})")
            token = command["env"]["DET_TRIAL_TOKEN"]
            if ranks.get("chief"):
                addr, port = self._rendezvous(t, chief_port(script))
            else:
                addr, port = str(ranks["master_addr"]), int(ranks["master_port"])
            self._log(t, f"det-agent {self.id}: ranks of trial {t.trial_id} rendezvous at "
                         f"{addr}:{port}")
            rendezvous = script_rendezvous(ranks, addr) if script else None
            model_dir, spec_path = self._write_spec(t, command, token, rendezvous)
            env = dict(part_env(ranks, slot_ids, token, addr, port, script),
                       DET_MASTER=self._poller.url, DET_TRIAL_SPEC=spec_path,
                       DET_DIST_SPEC=spec_path, DET_AGENT_ID=self.id)
            env.update(interface_env(self.address, dict(os.environ)))
            env.update(self._gpu_env(t, slot_ids))
            for proc in part_processes(ranks, len(slot_ids), script):
                with self._lock:
                    if t.killed:
                        raise _Killed()
                pid, out_fd = self._spawner.spawn(
                    dict(env, DET_RANK=str(proc.rank), DET_LOCAL_RANK=str(proc.local_rank)),
                    model_dir, module=proc.module)
                with self._lock:
                    t.pids.append(pid)
                threading.Thread(target=self._follow_rank,
                                 args=(t, pid, out_fd, proc.prefix, results),
                                 name=f"det-rank-{t.trial_id}-{proc.rank}", daemon=True).start()
                started += 1
            with self._lock:
                killed = t.killed
            if killed:  # killed while they were being spawned
                self._kill(t)
        except _Killed:
            self._log(t, f"det-agent {self.id}: ranks of trial {t.trial_id} killed before "
                         "they all started")
            failure = -9
        except Exception as e:
            self._log(t, f"det-agent {self.id}: could not start ranks of trial "
                         f"{t.trial_id}: {type(e).__name__}: {e}")
            failure = 1
        if failure is not None:
            self._kill(t)
        for _ in range(started):
            code = results.get()
            if code != 0 and failure is None:
                failure = code
                self._kill(t)  # the part's other ranks
        self._events.put(("exit", t.launch_id, failure or 0))

    def _follow_rank(self, t: _Part, pid: int, out_fd: int, prefix: str,
                     results: "queue.Queue[int]") -> None:
        """Ship one process's output lines (each after ``prefix``), then put its exit
        code in ``results``."""
        results.put(self._follow(t.launch_id, pid, out_fd, prefix))

    def _rendezvous(self, t: _Part, port: int, timeout: float = 60.0) -> Tuple[str, int]:
        """Tell the master where rank 0 listens (``port``); it then sends the other parts."""
        deadline = time.monotonic() + timeout
        backoff = 0.2
        while True:
            with self._lock:
                session, killed = self._session, t.killed
            if killed:
                raise _Killed()
            if session is not None:
                try:
                    with MasterClient(self.master_url, token=self.token, timeout=10.0) as c:
                        answer = c.request("POST", f"/agents/{self.id}/rendezvous", json={
                            "session": session, "launch_id": t.launch_id,
                            "address": self.address, "port": port})
                    if not answer.get("started"):
                        raise _Killed()  # the trial no longer waits for this part
                    return self.address or "127.0.0.1", port
                except APIError as e:
                    if time.monotonic() > deadline or e.status in (400, 401, 403, 422):
                        raise
            elif time.monotonic() > deadline:
                raise RuntimeError("not registered with the master: no rendezvous")
            time.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    def _model_def(self, experiment_id: int, trial_token: str) -> str:
        """The experiment's model definition, fetched once into the work dir."""
        root = os.path.join(self.work_dir, "models", self._cluster_id)
        path = os.path.join(root, str(experiment_id))
        with self._lock:
            lock = self._model_locks.setdefault(experiment_id, threading.Lock())
        with lock:
            if os.path.isdir(path):
                return path
            import base64

            answer = self._fetcher.request(
                "GET", f"/experiments/{experiment_id}/model_def",
                headers={"Authorization": f"Bearer {trial_token}"})
            os.makedirs(root, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{experiment_id}-", dir=root)
            try:
                unpack_context(base64.b64decode(answer["b64_tgz"]), tmp)
                os.rename(tmp, path)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            # Byte-compile once here rather than in every trial process.
            compileall.compile_dir(path, quiet=2, workers=1)
            return path


    # -- tasks -------------------------------------------------------------------------

    def _handle_launch_task(self, command: Dict[str, Any]) -> None:
        task = _Task(command["launch_id"], str(command["task_id"]))
        with self._lock:
            self._tasks[task.launch_id] = task  # named in "running" from now on
        if self._stop.is_set():
            self._events.put(("lines", task.launch_id, [f"det-agent {self.id}: shutting down; "
                                                        "task not started"]))
            self._events.put(("exit", task.launch_id, 1))
            return
        threading.Thread(target=self._run_task, args=(task, command),
                         name=f"det-task-{task.task_id}", daemon=True).start()

    def _run_task(self, task: _Task, command: Dict[str, Any]) -> None:
        """Start the task's process, then ship its output until it exits (the process
        dies with this thread)."""

        def log(lines: List[str]) -> None:
            self._events.put(("lines", task.launch_id, lines))

        kind = str(command["kind"])
        task_dir = os.path.join(self.work_dir, "tasks", task.task_id)
        try:
            slot_ids = [int(s) for s in command.get("slot_ids") or []]
            env_vars = {"DET_AGENT_ID": self.id, "DET_SLOT_IDS": ",".join(map(str, slot_ids))}
            env_vars.update(trial_gpu_env(self.gpus, slot_ids, self.slots_per_gpu,
                                          self.gpu_memory_fraction))
            argv, env, work, port = task_from_command(command, task_dir, self.address,
                                                      self._poller.url, env_vars)
            with self._lock:
                if task.killed:
                    raise _Killed()
                task.process = TaskProcess(argv, env, work)
            log([f"det-agent {self.id}: started {kind} task {task.task_id}"
                 + (f" on slot(s) {','.join(map(str, slot_ids))}" if slot_ids else "")])
            self._events.put(("started", task.launch_id, {"host": self.address, "port": port}))
        except _Killed:
            self._events.put(("exit", task.launch_id, -15))
            return
        except Exception as e:
            log([f"det-agent {self.id}: could not start task {task.task_id}: "
                 f"{type(e).__name__}: {e}"])
            self._events.put(("exit", task.launch_id, 1))
            return
        code = task.process.pump(log)
        shutil.rmtree(task_dir, ignore_errors=True)  # its context, logdir, history
        self._events.put(("exit", task.launch_id, code))

    def _kill_task(self, task: _Task, sig: int) -> None:
        with self._lock:
            task.killed = True
            process = task.process
        if process is None:
            return
        if sig == signal.SIGKILL:
            process.signal(sig)
        else:
            process.stop()


class _Killed(Exception):
    pass
