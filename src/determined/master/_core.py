"""The master's core: the scheduler loop, the resource manager and the tasks, around
the :class:`~determined.master.experiments.Experiments` service that owns the live
experiments.

One lock guards all live state: the service's (``Master.lock`` is the same), which the
scheduler thread, process-exit callbacks and the task manager share. Long polls wait
on ``Master.cond``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import determined
from determined import engine
from determined._version import AGENT_PROTOCOL
from determined.common.identity import directory_id
from determined.master import scheduler
from determined.master._config import MasterConfig
from determined.master._lifecycle import event
from determined.master._waits import WaitBook
from determined.master.db import TERMINAL_STATES, Store
from determined.master.tasks import TaskManager
from determined.master.experiments import Experiments, ExperimentRun, TrialHandle
from determined.master.experiments._cleanup import (GRACE_SECONDS, clean_checkpoint_roots,
                                                    finish_deletions)
from determined.master._tensorboard_paths import TensorboardPaths
from determined.master.resource_managers import (
    AGENT_ID,
    CompositeResourceManager,
    EmbeddedResourceManager,
    RemoteResourceManager,
    TrialLaunch,
)

__all__ = ["Master"]


class _Launch(NamedTuple):
    run: "ExperimentRun"
    trial: "TrialHandle"
    spec: Dict[str, Any]
    trial_dir: str
    agent_id: str
    slot_ids: List[int]
    restarts: int
    parts: Any = None  # every (agent, slots) of a trial spanning agents (remote or Ray)


logger = logging.getLogger("determined.master")


class NotifyingCondition(threading.Condition):
    """A condition that also calls ``listeners`` on ``notify_all`` (async long polls
    wait on the event loop, not in a thread).

    ``notify_all(scope)`` passes ``scope`` to the listeners: an experiment id wakes only
    the long polls of that experiment's trials; None wakes every one.
    """

    def __init__(self, lock: Any):
        super().__init__(lock)
        self.listeners: List[Any] = []

    def notify_all(self, scope: Optional[int] = None) -> None:  # type: ignore[override]
        super().notify_all()
        for listener in self.listeners:
            listener(scope)


class Master:
    def __init__(self, config: MasterConfig):
        self.config = config
        os.makedirs(config.data_dir, mode=0o700, exist_ok=True)
        os.chmod(config.data_dir, 0o700)  # holds the database, code and logs of every user
        # The built-in default storage lives in the data dir, so it is the master's to make;
        # a host_path a config names must exist where the trials run (nothing makes it).
        default_storage = os.path.join(config.data_dir, "checkpoints")
        if (config.checkpoint_storage or {}).get("host_path") == default_storage:
            os.makedirs(default_storage, exist_ok=True)
        self.store = Store(config.db or "")
        logger.info("database schema at revision %s", self.store.upgrade())
        self.store.prune_deleted_create_keys()  # deletes prune too; a quiet master, here
        self.experiments = Experiments(
            self.store, config.data_dir, config.limits, capacity=self._capacity,
            kill_process=self.kill_trial, wake=self.changed,
            wake_scheduler=self.wake_scheduler, delete_files=self.delete_files)
        self.lock = self.experiments.lock
        self.cond = NotifyingCondition(self.lock)
        self.allocations: Dict[str, Tuple[scheduler.Task, scheduler.Allocation]] = {}
        self.url = f"http://{config.host}:{config.port}"
        self.cluster_id = self._cluster_id()
        self.tensorboard_paths = TensorboardPaths(config.data_dir, self.store, self.cluster_id)
        rm = config.resource_manager
        self.policy = scheduler.SchedulerPolicy(type=rm.scheduler.type, fit=rm.scheduler.fit)
        self._wake = threading.Event()
        self.waiting = WaitBook(self.lock)  # why pending trials and tasks wait
        embedded = None
        if rm.slots > 0 and rm.type != "ray":  # slots 0: no embedded agent, remote agents only
            embedded = EmbeddedResourceManager(
                rm.slots, self._process_exited, self._store_logs,
                slots_per_gpu=rm.slots_per_gpu, gpu_memory_fraction=rm.gpu_memory_fraction,
                gpu_sink=self._store_gpu_samples, gpu_metrics_interval=rm.gpu_metrics_interval)
            self.store.upsert_agent(AGENT_ID, rm.slots)
        remote = RemoteResourceManager(self._process_exited, self._store_logs,
                                       timeout=rm.agent_timeout, on_change=self._wake.set,
                                       on_lost=self.store.revoke_trial_tokens)
        remote.chief_grace = rm.chief_grace
        ray_nodes = None
        if rm.type == "ray":  # trials on a Ray cluster (resource_managers/_ray.py)
            from determined.master.resource_managers._ray import RayResourceManager

            ray_nodes = RayResourceManager(
                str(rm.address), self._process_exited, self._store_logs,
                cpus_per_slot=rm.cpus_per_slot, on_change=self._wake.set,
                on_lost=self.store.revoke_trial_tokens, chief_grace=rm.chief_grace)
        self.rm = CompositeResourceManager(embedded, remote, ray_nodes)
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self.tasks = TaskManager(self)  # commands, notebooks, shells, TensorBoards
        remote.task_events = self.tasks  # tasks on remote agents report to it
        remote.gpu_sink = self._store_gpu_samples
        if ray_nodes is not None:
            ray_nodes.task_events = self.tasks  # and tasks on Ray nodes

    def _cluster_id(self) -> str:
        return directory_id(self.config.data_dir)

    # ------------------------------------------------------------------ lifecycle

    def start(self, url: Optional[str] = None) -> None:
        """Restore unfinished experiments and start scheduling."""
        if url:
            self.url = url
        self._kill_orphans()
        self.experiments.restore_unfinished()
        threading.Thread(target=self._clean_checkpoint_roots, name="det-checkpoint-cleanup",
                         daemon=True).start()
        self.tasks.start()
        self._thread = threading.Thread(target=self._loop, name="det-scheduler", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread:
            self._thread.join(5)
        self.tasks.close()
        self.rm.close()
        self.store.close()

    def _kill_orphans(self) -> None:
        """Kill trial processes a crashed master left behind (their pid files remain)."""
        root = os.path.join(self.config.data_dir, "experiments")
        for dirpath, _, files in os.walk(root):
            if "pid" not in files:
                continue
            path = os.path.join(dirpath, "pid")
            try:
                with open(path, encoding="utf-8") as f:
                    pid = int(f.read().strip())
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                ours = (b"determined.harness._rest_host" in cmdline
                        or b"determined._procs._zygote" in cmdline)
                if ours:
                    os.killpg(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
            try:
                os.remove(path)
            except OSError:
                pass

    def _clean_checkpoint_roots(self) -> None:
        """Remove unfinished checkpoint writes (scratch dirs, complete but never
        registered checkpoints) from every shared_fs root this master uses, and the files
        of DELETED checkpoints that a GC killed with the old master left."""
        try:
            finish_deletions(self.store)
        except Exception as e:  # noqa: BLE001 - housekeeping must not stop the master
            logger.warning("finishing checkpoint deletions failed: %s", e)
        try:
            # Only the embedded agent ever ran trials: all of them died with the old
            # master (orphans are killed), so no writer of its own can be alive (another
            # master's, sharing the storage, may be: its files are never this one's).
            others = [a for a in self.store.list_agents() if a.id != AGENT_ID]
            clean_checkpoint_roots(self.store, self.config.checkpoint_storage or {},
                                   self.cluster_id, grace=GRACE_SECONDS if others else 0.0)
        except Exception as e:  # noqa: BLE001 - housekeeping must not stop the master
            logger.warning("checkpoint cleanup failed: %s", e)

    def _capacity(self, config: Dict[str, Any]) -> int:
        """Trials of an experiment the live agents can run at once."""
        resources = config.get("resources") or {}
        max_slots = resources.get("max_slots")
        return engine.capacity(self.rm.slots, int(max_slots) if max_slots else None,
                               int(resources.get("slots_per_trial") or 1))

    def _tell_capacity(self) -> None:
        """Tell each run its capacity (lock held; a run ignores no change)."""
        for run in self.experiments.runs():
            run.capacity_changed(self._capacity(run.config))

    def delete_files(self, storage: Any, uuids: List[str]) -> None:
        """Delete checkpoint files in the background (never under the lock)."""
        def work() -> None:
            for uuid in uuids:
                try:
                    storage.delete(uuid)
                except Exception as e:  # noqa: BLE001 - the record says DELETED; log it
                    logger.warning("could not delete checkpoint %s: %s", uuid, e)
        threading.Thread(target=work, name="det-checkpoint-gc", daemon=True).start()

    # ------------------------------------------------------------------ experiments

    def changed(self, exp_id: Optional[int] = None) -> None:
        """Something a scheduler decision or a waiting runner depends on changed: wake
        the scheduler and the runners of experiment ``exp_id`` (None: of every one)."""
        self.cond.notify_all(exp_id)
        self._wake.set()

    def wake_scheduler(self) -> None:
        """Run a scheduling pass soon (no runner needs waking)."""
        self._wake.set()

    # ------------------------------------------------------------------ trial processes

    def kill_trial(self, trial_id: int) -> None:
        self.rm.kill(trial_id)

    def _store_logs(self, trial_id: int, lines: Any) -> None:
        self.store.add_logs(trial_id, list(lines))

    def trial_log_complete(self, trial_id: int) -> bool:
        """Whether the trial's log has every line it will ever have: the trial ended
        and no process of it is left. Its end line is stored with its end state (both
        under the lock), and a process's output is stored before its exit is handled,
        which gives its slots back (``_process_exited``). Checked before a log page is
        read, the page then holds the rest of the log.

        Raises:
            NotFoundError: there is no trial ``trial_id``.
        """
        with self.lock:
            ended = self.store.get_trial(trial_id).state in TERMINAL_STATES
            return ended and scheduler.trial_task_id(trial_id) not in self.allocations

    def _store_gpu_samples(self, trial_id: int, samples: List[Dict[str, Any]]) -> None:
        try:
            self.store.add_gpu_samples(trial_id, samples)
        except Exception as e:  # noqa: BLE001 - metrics must never stop an agent's reports
            logger.warning("could not store GPU samples of trial %s: %s", trial_id, e)

    def _process_exited(self, trial_id: int, code: int) -> None:
        with self.lock:
            self.allocations.pop(scheduler.trial_task_id(trial_id), None)
            found = self.experiments.trial(trial_id)
            if found is None:
                return
            run, t = found
            run.process_exited(t, code)
            self.changed()

    def _prepare_launch(self, run: ExperimentRun, t: TrialHandle,
                        alloc: scheduler.Allocation) -> "_Launch":
        """The in-memory part of starting a trial (called with the lock held)."""
        restore, warm = run.restore_path(t)
        run.started(t)
        spec = {
            "env": {
                "experiment_config": run.config, "hparams": t.hparams,
                "model_dir": run.model_dir, "experiment_id": run.id, "trial_id": t.trial_id,
                "trial_seed": t.seed, "latest_checkpoint": restore, "warm_start": warm,
                "owner": self.cluster_id,
                "tensorboard_path": self.tensorboard_paths.sync_path(run.id, t.trial_id),
            },
            "storage": run.storage_config,
            # Leave a core to the master: torch threads spinning on every core stall it.
            "threads": max(1, ((os.cpu_count() or 1) - 1) // max(1, self.rm.local_slots)),
        }
        trial_dir = os.path.join(self.config.data_dir, "experiments", str(run.id), "trials",
                                 str(t.trial_id))
        agent_id, slot_ids = alloc.parts[0]  # more parts only where rm.can_span them
        return _Launch(run, t, spec, trial_dir, agent_id, list(slot_ids), t.restarts,
                       alloc.parts if len(alloc.parts) > 1 else None)

    def _launch(self, launch: "_Launch") -> None:
        """Start a prepared trial's process (without the lock: API calls go on)."""
        t = launch.trial
        try:
            os.makedirs(launch.trial_dir, exist_ok=True)
            spec_path = os.path.join(launch.trial_dir, f"spec-{launch.restarts}.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(launch.spec, f, default=str)
            # One write: an earlier runner's token goes as this one's is made.
            token = self.store.create_trial_token(t.trial_id, replace=True)
            pid = self.rm.launch(TrialLaunch(
                t.trial_id, launch.run.id,
                tuple((a, tuple(s)) for a, s in (launch.parts
                                                 or [(launch.agent_id, launch.slot_ids)])),
                {"DET_MASTER": self.url, "DET_TRIAL_TOKEN": token, "DET_TRIAL_SPEC": spec_path},
                launch.spec, launch.run.model_dir))
            if pid is not None:  # the embedded agent's (orphan cleanup after a crash)
                with open(os.path.join(launch.trial_dir, "pid"), "w", encoding="utf-8") as f:
                    f.write(str(pid))
        except Exception as e:
            logger.error("could not start trial %s: %s", t.trial_id, e)
            with self.lock:
                self.allocations.pop(scheduler.trial_task_id(t.trial_id), None)
                if t.core.state in engine.LIVE:
                    launch.run.process_exited(t, 1)  # a failed start: restart rules apply
                self.changed()

    # ------------------------------------------------------------------ scheduling

    def _loop(self) -> None:
        while not self._stopping:
            self._wake.wait(1.0)
            self._wake.clear()
            if self._stopping:
                return
            try:
                with self.lock:
                    launches = self._schedule_once()
                for launch in launches:
                    self._launch(launch)
            except Exception as e:  # keep scheduling; the error is in the master log
                logger.exception("scheduling failed: %s: %s", type(e).__name__, e)

    def _task(self, run: ExperimentRun, t: TrialHandle) -> scheduler.Task:
        exp = run.cfg
        return scheduler.Task(
            scheduler.trial_task_id(t.trial_id), f"exp-{run.id}", exp.slots_per_trial, arrival=t.arrival,
            weight=float(run.config.get("resources", {}).get("weight") or 1.0),
            max_slots=run.config.get("resources", {}).get("max_slots"),
            priority=run.config.get("resources", {}).get("priority"),
            agent_label=str(run.config.get("resources", {}).get("agent_label") or ""),
        )

    def _schedule_once(self) -> "List[_Launch]":
        self._tell_capacity()
        pending: Dict[str, Tuple[ExperimentRun, TrialHandle]] = {}
        for run in self.experiments.runs():
            for t in run.schedulable():
                pending[scheduler.trial_task_id(t.trial_id)] = (run, t)
        # Running tasks with their experiment's current weight/priority/max_slots: a live
        # edit must reach them too (the scheduler wants one setting per group).
        running = {}
        for task_id, (task, alloc) in self.allocations.items():
            found = self.experiments.trial(scheduler.trial_of_task(task_id))
            running[task_id] = (self._task(*found) if found else task, alloc)
        self.tasks.place_unslotted()  # TensorBoards waiting for an agent
        running.update(self.tasks.running())  # tasks hold slots too (master/tasks)
        self._release_waiting(self.rm.slots - sum(a.slot_count for _, a in running.values()),
                              len(pending))
        agents = self.rm.agents()
        task_pending = self.tasks.pending()
        tasks = [self._task(r, t) for r, t in pending.values()] + task_pending
        decision = scheduler.schedule(agents, tasks, running, self.policy)
        self.waiting.note(scheduler.waiting_reasons(
            agents, tasks, running, decision, self.policy,
            one_agent={t.id for t in task_pending}, span_groups=self.rm.span_groups()))
        launches = []
        for alloc in decision.start:
            if self.tasks.claim(alloc):  # a task's allocation: it starts itself
                continue
            run, t = pending[alloc.task_id]
            if len(alloc.parts) > 1 and not self.rm.can_span(alloc.parts):
                continue  # it waits for one agent's slots (self.waiting says so)
            self.allocations[alloc.task_id] = (self._task(run, t), alloc)
            launches.append(self._prepare_launch(run, t, alloc))
            event("trial %s of experiment %s scheduled on %s", t.trial_id, run.id,
                  ", ".join(f"{agent} slots {list(slots)}" for agent, slots in alloc.parts))
        for task_id in decision.preempt:
            found = self.experiments.trial(scheduler.trial_of_task(task_id))
            if found:
                found[0].stop(found[1])
        return launches

    def _release_waiting(self, free: int, wanting: int) -> None:
        """Trials waiting for work give their slots back by the rule both adapters
        follow (``engine.release_waiting``), for their own experiment's trials (within
        its max_slots) and, while the cluster is full, for any experiment's."""
        for run in self.experiments.runs():
            per_trial = run.cfg.slots_per_trial
            running, waiting = len(run.running()), len(run.idle_running())
            max_slots = (run.config.get("resources") or {}).get("max_slots")
            room = free if max_slots is None else min(free, int(max_slots) - running * per_trial)
            own = engine.release_waiting(wanting=len(run.schedulable()), running=running,
                                         waiting=waiting, free_slots=room,
                                         slots_per_trial=per_trial)
            others = engine.release_waiting(wanting=wanting, running=running, waiting=waiting,
                                            free_slots=free, slots_per_trial=1)
            if own or others:
                run.suspend_idle()

    def slot_holders(self) -> List[Tuple[str, scheduler.Allocation]]:
        """Every task holding slots now (trials as ``trial-<id>``), with its allocation."""
        with self.lock:
            held = list(self.allocations.items()) + list(self.tasks.running().items())
        return [(task_id, alloc) for task_id, (_, alloc) in held]

    def experiment_waits(self) -> Dict[int, scheduler.Wait]:
        """Per live experiment none of whose trials holds slots: why its first waiting
        trial waits (see :class:`WaitBook`)."""
        return self.waiting.by_experiment(self.experiments, self.allocations)

    def set_scheduling_flags(self, flags: Any) -> None:
        """Apply the stored enabled/disabled agents and slots (``Store.scheduling_flags``)."""
        with self.lock:
            self.rm.flags = flags
            self.changed()

    # ------------------------------------------------------------------ info

    def master_info(self) -> Dict[str, Any]:
        # idempotent_create: a create's Idempotency-Key is honoured (clients retry on it).
        return {"version": determined.__version__, "agent_protocol": AGENT_PROTOCOL,
                "idempotent_create": True, "cluster_id": self.cluster_id,
                "master_id": self.cluster_id, "url": self.url, "time": time.time()}
