"""The master's core: experiments, the scheduler loop and the resource manager.

One lock (``Master.lock``) guards all live state; API handlers, the scheduler
thread and process-exit callbacks take it. Long polls wait on ``Master.cond``.
"""

from __future__ import annotations

import compileall
import json
import os
import signal
import threading
import time
import uuid as uuidlib
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import determined
from determined.common.api import unpack_context
from determined.config import validate_config
from determined.master import scheduler
from determined.master._config import MasterConfig
from determined.master.db import Store
from determined.master.tasks import TaskManager
from determined.master.experiments import ExperimentRun, TrialState
from determined.master.resource_managers import (
    AGENT_ID,
    CompositeResourceManager,
    EmbeddedResourceManager,
    RemoteResourceManager,
)

__all__ = ["Master"]


class _Launch(NamedTuple):
    run: "ExperimentRun"
    trial: "TrialState"
    spec: Dict[str, Any]
    trial_dir: str
    agent_id: str
    slot_ids: List[int]
    restarts: int

OWNER = "determined"


class NotifyingCondition(threading.Condition):
    """A condition that also calls ``listeners`` on ``notify_all`` (async long polls
    wait on the event loop, not in a thread)."""

    def __init__(self, lock: Any):
        super().__init__(lock)
        self.listeners: List[Any] = []

    def notify_all(self) -> None:
        super().notify_all()
        for listener in self.listeners:
            listener()


class Master:
    def __init__(self, config: MasterConfig):
        self.config = config
        os.makedirs(config.data_dir, mode=0o700, exist_ok=True)
        os.chmod(config.data_dir, 0o700)  # holds the database, code and logs of every user
        self.store = Store(config.db or "")
        self.store.upgrade()
        self.lock = threading.RLock()
        self.cond = NotifyingCondition(self.lock)
        self.runs: Dict[int, ExperimentRun] = {}
        self.trials: Dict[int, Tuple[ExperimentRun, TrialState]] = {}
        self.allocations: Dict[str, Tuple[scheduler.Task, scheduler.Allocation]] = {}
        self.url = f"http://{config.host}:{config.port}"
        self.cluster_id = self._cluster_id()
        rm = config.resource_manager
        self.policy = scheduler.SchedulerPolicy(type=rm.scheduler.type, fit=rm.scheduler.fit)
        self._wake = threading.Event()
        self._split_warned: set = set()  # trials told they wait for one agent's slots
        embedded = None
        if rm.slots > 0:  # slots 0: no embedded agent, remote agents only
            embedded = EmbeddedResourceManager(rm.slots, self._process_exited, self._store_logs)
            self.store.upsert_agent(AGENT_ID, rm.slots)
        remote = RemoteResourceManager(self._process_exited, self._store_logs,
                                       timeout=rm.agent_timeout, on_change=self._wake.set,
                                       on_lost=self.store.revoke_trial_tokens)
        self.rm = CompositeResourceManager(embedded, remote)
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self.tasks = TaskManager(self)  # commands, notebooks, shells, TensorBoards

    def _cluster_id(self) -> str:
        path = os.path.join(self.config.data_dir, "cluster_id")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(str(uuidlib.uuid4()))
        with open(path, encoding="utf-8") as f:
            return f.read().strip()

    # ------------------------------------------------------------------ lifecycle

    def start(self, url: Optional[str] = None) -> None:
        """Restore unfinished experiments and start scheduling."""
        if url:
            self.url = url
        self._kill_orphans()
        with self.lock:
            for exp in self.store.list_experiments(include_archived=True):
                if exp.state in ("STOPPING_COMPLETED", "STOPPING_CANCELED", "STOPPING_ERROR"):
                    run = self._make_run(exp.id, exp.config, exp.state)
                    run.restore()
                    run.maybe_finish()
                elif exp.state in ("ACTIVE", "PAUSED"):
                    run = self._make_run(exp.id, exp.config, exp.state)
                    run.restore()
                    self.runs[exp.id] = run
                    run.maybe_finish()
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
                        or b"determined.agent._zygote" in cmdline)
                if ours:
                    os.killpg(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
            try:
                os.remove(path)
            except OSError:
                pass

    def _make_run(self, exp_id: int, config: Dict[str, Any], state: str) -> ExperimentRun:
        model_dir = os.path.join(self.config.data_dir, "experiments", str(exp_id), "model_def")
        if not os.path.isdir(model_dir):
            unpack_context(self.store.get_model_def(exp_id), model_dir)
            # Byte-compile once here rather than in every trial process.
            compileall.compile_dir(model_dir, quiet=2, workers=1)
        run = ExperimentRun(self, exp_id, config, state, model_dir)
        # Automatic concurrency follows the trials the cluster can run at once (a
        # restored run's snapshot brings the value it had).
        resources = config.get("resources") or {}
        slots = min(self.rm.slots, int(resources.get("max_slots") or self.rm.slots))
        capacity = slots // max(1, int(resources.get("slots_per_trial") or 1))
        if capacity >= 1:
            run.searcher.on_capacity_changed(capacity)
        return run

    # ------------------------------------------------------------------ experiments

    def validate(self, raw: Any) -> Dict[str, Any]:
        """Validate an experiment config with the master's defaults (raises
        InvalidConfigError listing every error)."""
        if isinstance(raw, dict) and raw.get("checkpoint_storage", {}) is None:
            raw = {k: v for k, v in raw.items() if k != "checkpoint_storage"}  # the default
        defaults = {"checkpoint_storage": dict(self.config.checkpoint_storage or {})}
        if isinstance(raw, dict) and isinstance(raw.get("checkpoint_storage"), dict) and raw[
            "checkpoint_storage"
        ].get("type") not in (None, "shared_fs"):
            defaults = {}
        return validate_config(raw, defaults=defaults)

    def create_experiment(self, config: Dict[str, Any], model_def: bytes, activate: bool,
                          owner: str = OWNER) -> int:
        with self.lock:
            exp_id = self.store.create_experiment(config, model_def, owner=owner)
            run = self._make_run(exp_id, config, "PAUSED")
            self.runs[exp_id] = run
            run.start()
            if activate:
                run.activate()
            return exp_id

    def finished(self, run: ExperimentRun) -> None:
        self.runs.pop(run.id, None)
        for t in run.trials.values():
            self.trials.pop(t.trial_id, None)

    def changed(self) -> None:
        """Something a scheduler decision or a waiting runner depends on changed."""
        self.cond.notify_all()
        self._wake.set()

    # ------------------------------------------------------------------ trial processes

    def trial(self, trial_id: int) -> Tuple[ExperimentRun, TrialState]:
        return self.trials[trial_id]

    def kill_trial(self, trial_id: int) -> None:
        self.rm.kill(trial_id)

    def _store_logs(self, trial_id: int, lines: Any) -> None:
        self.store.add_logs(trial_id, list(lines))

    def _process_exited(self, trial_id: int, code: int) -> None:
        with self.lock:
            self.allocations.pop(f"trial-{trial_id}", None)
            found = self.trials.get(trial_id)
            if found is None:
                return
            run, t = found
            run.process_exited(t, code)
            self.changed()

    def _prepare_launch(self, run: ExperimentRun, t: TrialState,
                        alloc: scheduler.Allocation) -> "_Launch":
        """The in-memory part of starting a trial (called with the lock held)."""
        restore, warm = run.restore_path(t)
        spec = {
            "env": {
                "experiment_config": run.config, "hparams": t.hparams,
                "model_dir": run.model_dir, "experiment_id": run.id, "trial_id": t.trial_id,
                "trial_seed": t.seed, "latest_checkpoint": restore, "warm_start": warm,
            },
            "storage": run.storage_config,
            # Leave a core to the master: torch threads spinning on every core stall it.
            "threads": max(1, ((os.cpu_count() or 1) - 1) // max(1, self.rm.local_slots)),
        }
        trial_dir = os.path.join(self.config.data_dir, "experiments", str(run.id), "trials",
                                 str(t.trial_id))
        run.started(t)
        self.trials[t.trial_id] = (run, t)
        ((agent_id, slot_ids),) = alloc.parts  # _schedule_once keeps trials on one agent
        return _Launch(run, t, spec, trial_dir, agent_id, list(slot_ids), t.restarts)

    def _launch(self, launch: "_Launch") -> None:
        """Start a prepared trial's process (without the lock: API calls go on)."""
        t = launch.trial
        try:
            os.makedirs(launch.trial_dir, exist_ok=True)
            spec_path = os.path.join(launch.trial_dir, f"spec-{launch.restarts}.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(launch.spec, f, default=str)
            self.store.revoke_trial_tokens(t.trial_id)  # an earlier runner must not report
            token = self.store.create_trial_token(t.trial_id)
            pid = self.rm.launch(launch.agent_id, t.trial_id,
                                 {"DET_MASTER": self.url, "DET_TRIAL_TOKEN": token,
                                  "DET_TRIAL_SPEC": spec_path},
                                 launch.slot_ids, launch.run.model_dir, launch.spec, launch.run.id)
            if pid is not None:  # the embedded agent's (orphan cleanup after a crash)
                with open(os.path.join(launch.trial_dir, "pid"), "w", encoding="utf-8") as f:
                    f.write(str(pid))
        except Exception as e:
            print(f"det-master: could not start trial {t.trial_id}: {e}", flush=True)
            with self.lock:
                self.allocations.pop(f"trial-{t.trial_id}", None)
                if t.state == "RUNNING":
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
                print(f"det-master: scheduling failed: {type(e).__name__}: {e}", flush=True)

    def _task(self, run: ExperimentRun, t: TrialState) -> scheduler.Task:
        exp = run.cfg
        return scheduler.Task(
            f"trial-{t.trial_id}", f"exp-{run.id}", exp.slots_per_trial, arrival=t.arrival,
            weight=float(run.config.get("resources", {}).get("weight") or 1.0),
            max_slots=run.config.get("resources", {}).get("max_slots"),
            priority=run.config.get("resources", {}).get("priority"),
            agent_label=str(run.config.get("resources", {}).get("agent_label") or ""),
        )

    def _schedule_once(self) -> "List[_Launch]":
        pending: Dict[str, Tuple[ExperimentRun, TrialState]] = {}
        for run in list(self.runs.values()):
            for t in run.schedulable():
                pending[f"trial-{t.trial_id}"] = (run, t)
        # Running tasks with their experiment's current weight/priority/max_slots: a live
        # edit must reach them too (the scheduler wants one setting per group).
        running = {}
        for task_id, (task, alloc) in self.allocations.items():
            found = self.trials.get(int(task_id.split("-", 1)[1]))
            running[task_id] = (self._task(*found) if found else task, alloc)
        running.update(self.tasks.running())  # tasks hold slots too (master/tasks)
        if pending and sum(a.slot_count for _, a in running.values()) >= self.rm.slots:
            self._suspend_idle()
        decision = scheduler.schedule(
            self.rm.agents(),
            [self._task(r, t) for r, t in pending.values()] + self.tasks.pending(), running,
            self.policy,
        )
        launches = []
        for alloc in decision.start:
            if self.tasks.claim(alloc):  # a task's allocation: it starts itself
                continue
            run, t = pending[alloc.task_id]
            if len(alloc.parts) > 1:  # trials spanning agents are not supported: wait
                if t.trial_id not in self._split_warned:
                    self._split_warned.add(t.trial_id)
                    print(f"det-master: trial {t.trial_id} needs {alloc.slot_count} slots on "
                          "one agent; it waits until an agent has that many free", flush=True)
                continue
            self.allocations[alloc.task_id] = (self._task(run, t), alloc)
            launches.append(self._prepare_launch(run, t, alloc))
        for task_id in decision.preempt:
            found = self.trials.get(int(task_id.split("-", 1)[1]))
            if found:
                found[1].stop = True
                self.cond.notify_all()
        return launches

    def _suspend_idle(self) -> None:
        """Free slots of runners waiting for work (e.g. an ASHA promotion)."""
        for run in self.runs.values():
            for t in run.running():
                if t.waiting and not t.stop:
                    t.stop = True
                    self.cond.notify_all()

    # ------------------------------------------------------------------ info

    def master_info(self) -> Dict[str, Any]:
        return {"version": determined.__version__, "cluster_id": self.cluster_id,
                "master_id": self.cluster_id, "url": self.url, "time": time.time()}
