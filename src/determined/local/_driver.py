"""Run a whole experiment on this machine: the searcher in this process, each
trial in a process of its own (one per slot for a distributed trial: see
``determined.harness._distributed``), ``slots // slots_per_trial`` trials at a time.

The driver is a single-threaded event loop. It applies the searcher's operations
(queueing each trial's operations in order), starts trial processes when slots
are free, answers their requests and feeds the searcher the validations and
exits it sees. A trial process that dies is restarted from its latest
checkpoint, up to ``max_restarts`` times; errors in user code are not retried,
since they would only fail again.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import multiprocessing
import multiprocessing.connection
import os
import time
from typing import Any, Callable, Deque, Dict, List, Optional

from determined.config import ExperimentConfig
from determined.harness import OpKind, TrialEnv, TrialOp
from determined.local._store import LocalStore
from determined.local._pool import WarmPool, frameworks_used
from determined.storage import CheckpointRecord, build_storage, checkpoints_to_keep
from determined import searcher as searchers
from determined.common.trial_ops import trial_op

__all__ = ["LocalDriver", "TrialRecord", "ExperimentResult"]


@dataclasses.dataclass
class TrialRecord:
    trial_id: int
    request_id: int
    hparams: Dict[str, Any]
    seed: int
    checkpoint_of: Optional[int] = None
    state: str = "PENDING"  # PENDING, RUNNING, IDLE, COMPLETED, ERROR, CANCELED
    ops: Deque[TrialOp] = dataclasses.field(default_factory=collections.deque)
    current_op: Optional[TrialOp] = None
    last_train: Optional[TrialOp] = None
    waiting_for_op: bool = False
    process: Any = None
    conn: Any = None
    batches: int = 0
    best_metric: Optional[float] = None
    latest_validation: Optional[Dict[str, Any]] = None
    latest_checkpoint: Optional[str] = None
    checkpoint_batches: int = 0
    restarts: int = 0
    error: Optional[str] = None
    retryable: bool = True
    exit_reported: bool = False
    eof: bool = False
    suspending: bool = False
    warm_start: Optional[str] = None
    start_time: Optional[float] = None
    end_time: Optional[float] = None

    def summary(self) -> Dict[str, Any]:
        return {
            "trial_id": self.trial_id, "request_id": self.request_id, "hparams": self.hparams,
            "seed": self.seed, "state": self.state, "batches": self.batches,
            "best_metric": self.best_metric, "latest_validation": self.latest_validation,
            "latest_checkpoint": self.latest_checkpoint, "restarts": self.restarts,
            "error": self.error, "warm_start": self.warm_start,
            "start_time": self.start_time, "end_time": self.end_time,
        }


@dataclasses.dataclass
class ExperimentResult:
    experiment_id: int
    state: str
    trials: List[TrialRecord]
    best_trial: Optional[TrialRecord]
    best_checkpoint: Optional[str]
    best_checkpoint_path: Optional[str]
    directory: str
    reason: str = ""


class LocalDriver:
    """Drive one experiment to its end.

    Args:
        config: the normalized experiment config.
        model_dir: the model definition directory.
        experiment_id: this experiment's id (see ``allocate_ids``).
        store: where records go.
        storage_config: the checkpoint_storage section to use.
        slots: slots of this machine; ``slots // resources.slots_per_trial`` trials
            run at once.
        on_event: called with (kind, trial, details) for progress displays.
        first_trial_id: the id of the first trial; later ones count up.
    """

    def __init__(
        self,
        config: Dict[str, Any],
        model_dir: str,
        experiment_id: int,
        store: LocalStore,
        storage_config: Dict[str, Any],
        slots: int = 1,
        on_event: Optional[Callable[[str, Optional[TrialRecord], Dict[str, Any]], None]] = None,
        first_trial_id: int = 1,
        allocate_trial_id: Optional[Callable[[], int]] = None,
        resolve_source_checkpoint: Optional[Callable[[], Optional[str]]] = None,
    ):
        self.config = config
        self.cfg = ExperimentConfig(config)
        self.model_dir = os.path.abspath(model_dir)
        self.experiment_id = experiment_id
        self.store = store
        self.storage_config = storage_config
        self.storage = build_storage(storage_config)
        self.slots = max(1, slots)
        per_trial = self.cfg.slots_per_trial
        if per_trial > self.slots:
            raise ValueError(
                f"Expected at least resources.slots_per_trial={per_trial} slots to run a trial. "
                f"Received: slots={self.slots}"
            )
        self.concurrent = self.slots // per_trial  # trials running at once
        self.on_event = on_event or (lambda kind, trial, details: None)
        self._next_trial_id = first_trial_id
        self._allocate_trial_id = allocate_trial_id
        self.searcher = searchers.make_searcher(config)
        self.searcher.on_capacity_changed(self.concurrent)  # automatic concurrency follows it
        self.trials: Dict[int, TrialRecord] = {}  # by request id
        self.queue: Deque[int] = collections.deque()  # request ids waiting for a slot
        self.checkpoints: Dict[str, Dict[str, Any]] = {}
        self.best_value: Optional[float] = None  # signed: smaller is better
        self.shutdown: Optional[Any] = None
        self.state = "ACTIVE"
        self.start_time = time.time()
        self.source_checkpoint = resolve_source_checkpoint() if resolve_source_checkpoint else None
        self._ctx = multiprocessing.get_context("spawn")
        self._threads = max(1, (os.cpu_count() or 1) // self.slots)
        self.pool = WarmPool(self._ctx, self.concurrent, frameworks_used(self.model_dir), self._threads)

    # ------------------------------------------------------------------ main loop

    def run(self) -> ExperimentResult:
        try:
            return self._run()
        finally:
            self.pool.close()

    def _run(self) -> ExperimentResult:
        try:
            self._apply(self.searcher.start())
            while self.shutdown is None or self._running():
                self._start_queued()
                if self.shutdown is not None and not self._running():
                    break
                if not self._running():
                    if not self.queue:
                        raise RuntimeError(
                            "the searcher has no work for any trial but did not shut down"
                        )
                    continue
                running = self._running()
                if not self.queue and all(t.waiting_for_op for t in running):
                    raise RuntimeError(
                        "every running trial waits for work the searcher never sends "
                        f"(searcher {self.cfg.searcher['name']})"
                    )
                self._refill_pool()
                self._wait_and_handle()
        except KeyboardInterrupt:
            self.state = "CANCELED"
            self._kill_all()
            raise
        except BaseException:
            self.state = "ERROR"
            self._kill_all()
            self._save()
            raise
        failure = bool(getattr(self.shutdown, "failure", False))
        self.state = "ERROR" if failure else "COMPLETED"
        self._garbage_collect()
        self._save()
        return self._result(getattr(self.shutdown, "reason", ""))

    def _running(self) -> List[TrialRecord]:
        return [t for t in self.trials.values() if t.state == "RUNNING"]

    def _refill_pool(self) -> None:
        """Keep processes warm for trials that may start soon."""
        waiting = len(self.queue) + sum(1 for t in self.trials.values() if t.state == "IDLE")
        if self.shutdown is None:
            waiting = max(waiting, 1)
        self.pool.fill(min(self.concurrent, waiting))

    def _wait_and_handle(self) -> None:
        running = self._running()
        waitables: Dict[Any, TrialRecord] = {}
        for t in running:
            waitables[t.conn] = t
            waitables[t.process.sentinel] = t
        ready = multiprocessing.connection.wait(list(waitables), timeout=1.0)
        handled = set()
        for obj in ready:
            trial = waitables[obj]
            if trial.trial_id in handled:
                continue
            if obj is trial.conn or trial.conn.poll():
                self._drain(trial)
            if trial.state == "RUNNING" and not trial.process.is_alive() and (
                trial.eof or not trial.conn.poll()
            ):
                handled.add(trial.trial_id)
                self._process_ended(trial)

    def _drain(self, trial: TrialRecord) -> None:
        while trial.state == "RUNNING" and not trial.eof and trial.conn.poll():
            try:
                msg = trial.conn.recv()
            except (EOFError, OSError):
                trial.eof = True
                return
            self._handle(trial, msg)

    # ------------------------------------------------------------------ searcher ops

    def _apply(self, ops: List[Any]) -> None:
        for op in ops:
            if isinstance(op, searchers.Create):
                self._create(op)
            elif isinstance(op, searchers.Shutdown):
                self.shutdown = op
            else:
                trial = self.trials[op.request_id]
                trial.ops.append(trial_op(op))
                if trial.waiting_for_op:
                    self._send_next_op(trial)
                elif trial.state == "IDLE":
                    if trial.ops[0].kind is OpKind.CLOSE:
                        # Its last checkpoint is its final state: no process needed.
                        trial.ops.clear()
                        self._complete(trial, report_close=True)
                        continue
                    trial.state = "PENDING"
                    self.queue.append(trial.request_id)
        self.store.save_searcher(self.searcher.snapshot())

    def _create(self, op: Any) -> None:
        if self._allocate_trial_id is not None:
            trial_id = self._allocate_trial_id()
        else:
            trial_id = self._next_trial_id
            self._next_trial_id += 1
        trial = TrialRecord(trial_id, op.request_id, op.hparams, op.trial_seed, op.checkpoint_of)
        self.trials[op.request_id] = trial
        self.queue.append(op.request_id)
        self.on_event("created", trial, {})
        self._apply(self.searcher.on_trial_created(op.request_id))

    def _send_next_op(self, trial: TrialRecord) -> None:
        if not trial.ops:
            trial.waiting_for_op = True
            return
        trial.waiting_for_op = False
        trial.current_op = trial.ops.popleft()
        if trial.current_op.kind is OpKind.TRAIN:
            trial.last_train = trial.current_op
        trial.conn.send(("op", trial.current_op.to_dict()))

    # ------------------------------------------------------------------ processes

    def _parent_ready(self, trial: TrialRecord) -> bool:
        if trial.checkpoint_of is None:
            return True
        parent = self.trials[trial.checkpoint_of]
        pending = any(o.kind is OpKind.CHECKPOINT for o in parent.ops) or (
            parent.current_op is not None and parent.current_op.kind is OpKind.CHECKPOINT
            and parent.state == "RUNNING" and not parent.waiting_for_op
        )
        return not pending and parent.latest_checkpoint is not None

    def _start_queued(self) -> None:
        if self.queue and len(self._running()) >= self.concurrent:
            self._suspend_idle()
        for request_id in list(self.queue):
            if len(self._running()) >= self.concurrent:
                return
            trial = self.trials[request_id]
            if not self._parent_ready(trial):
                continue
            self.queue.remove(request_id)
            self._spawn(trial)

    def _suspend_idle(self) -> None:
        """Free the slots of trials that have no work (e.g. waiting for an ASHA
        promotion): they checkpoint and exit, and resume from that checkpoint
        when the searcher gives them more work."""
        for trial in self._running():
            if trial.waiting_for_op and not trial.suspending:
                trial.suspending = True
                trial.waiting_for_op = False
                trial.conn.send(("op", TrialOp(OpKind.CLOSE).to_dict()))

    def _spawn(self, trial: TrialRecord) -> None:
        restore: Optional[str] = None
        warm = False
        if trial.latest_checkpoint:
            restore = self.storage.describe(trial.latest_checkpoint)
        elif trial.checkpoint_of is not None:
            parent_ckpt = self.trials[trial.checkpoint_of].latest_checkpoint
            restore, warm = self.storage.describe(parent_ckpt), True  # type: ignore[arg-type]
            trial.warm_start = parent_ckpt
        elif self.source_checkpoint:
            restore, warm = self.source_checkpoint, True
            trial.warm_start = os.path.basename(self.source_checkpoint)
        env = TrialEnv(
            experiment_config=self.config,
            hparams=trial.hparams,
            model_dir=self.model_dir,
            experiment_id=self.experiment_id,
            trial_id=trial.trial_id,
            trial_seed=trial.seed,
            latest_checkpoint=restore,
            warm_start=warm,
        )
        process, conn = self.pool.run(
            (env, self.storage_config, self.store.trial_log_path(trial.trial_id), self._threads)
        )
        trial.process, trial.conn = process, conn
        trial.eof = False
        trial.state = "RUNNING"
        trial.waiting_for_op = False
        trial.start_time = trial.start_time or time.time()
        self.on_event("started", trial, {"restart": trial.restarts, "resumed": restore is not None and not warm})
        self._save()

    def _handle(self, trial: TrialRecord, msg: Any) -> None:
        kind = msg[0]
        if kind == "next_op":
            self._send_next_op(trial)
        elif kind == "training":
            _, batches, metrics = msg
            trial.batches = batches
            self.store.append_metrics(trial.trial_id, "training", batches, metrics["avg_metrics"])
            self.on_event("training", trial, metrics)
        elif kind == "validation":
            self._validation(trial, msg[1], msg[2])
        elif kind == "validate_op_completed":
            self._apply(self.searcher.on_validation_completed(
                trial.request_id, msg[2]["validation_metrics"]))
        elif kind == "checkpoint":
            _, batches, uuid, meta = msg
            trial.latest_checkpoint, trial.checkpoint_batches = uuid, batches
            self.checkpoints[uuid] = {
                "uuid": uuid, "trial_id": trial.trial_id, "batches": batches,
                "time": time.time(), "validation_metrics": meta.get("validation_metrics"),
                "state": "COMPLETED",
            }
            self.on_event("checkpoint", trial, {"uuid": uuid})
            self._save()
        elif kind == "is_best":
            value = self._signed(msg[1])
            trial.conn.send(("best", self.best_value is None or value <= self.best_value))
        elif kind == "early_exit":
            trial.exit_reported = True
            self._apply(self.searcher.on_trial_exited_early(
                trial.request_id, searchers.ExitedReason.USER_REQUESTED_STOP))
        elif kind == "error":
            _, err_kind, message = msg
            trial.error = message
            trial.retryable = err_kind == "platform"  # user-code errors would only fail again
        elif kind == "exit":
            pass

    def _signed(self, value: float) -> float:
        value = float(value)
        if math.isnan(value):
            return math.inf
        return value if self.cfg.smaller_is_better else -value

    def _validation(self, trial: TrialRecord, batches: int, metrics: Dict[str, Any]) -> None:
        values = metrics["validation_metrics"]
        self.store.append_metrics(trial.trial_id, "validation", batches, values)
        trial.latest_validation = values
        raw = values.get(self.cfg.metric)
        if raw is not None:
            signed = self._signed(raw)
            if self.best_value is None or signed < self.best_value:
                self.best_value = signed
            if trial.best_metric is None or signed < self._signed(trial.best_metric):
                trial.best_metric = float(raw)
        for c in self.checkpoints.values():
            if c["trial_id"] == trial.trial_id and c["batches"] == batches:
                c["validation_metrics"] = values
        self.on_event("validation", trial, values)
        self._save()

    def _process_ended(self, trial: TrialRecord) -> None:
        trial.process.join()
        code = trial.process.exitcode
        trial.conn.close()
        trial.process = trial.conn = None
        closed = trial.current_op is not None and trial.current_op.kind is OpKind.CLOSE
        if code == 0 and trial.suspending:
            trial.suspending = False
            trial.current_op = None
            trial.batches = trial.checkpoint_batches
            trial.state = "PENDING" if trial.ops else "IDLE"
            if trial.ops:
                self.queue.append(trial.request_id)
            self.on_event("suspended", trial, {})
            return
        trial.suspending = False
        if code == 0 and (closed or trial.exit_reported):
            self._complete(trial, report_close=closed and not trial.exit_reported)
            return
        max_restarts = self.cfg.max_restarts
        if trial.error is None:
            trial.error = f"trial process exited with code {code}"
        if trial.retryable and trial.restarts < max_restarts:
            trial.restarts += 1
            self.on_event("restart", trial, {"error": trial.error, "code": code})
            self.store.rollback(trial.trial_id, trial.checkpoint_batches)
            trial.batches = trial.checkpoint_batches
            if trial.current_op is not None:
                trial.ops.appendleft(trial.current_op)
                trial.current_op = None
            # Train lengths are cumulative: training lost since the checkpoint is redone
            # before anything else (e.g. a Validate must not run at the older batch count).
            if trial.last_train is not None and (not trial.ops or trial.ops[0] != trial.last_train):
                trial.ops.appendleft(trial.last_train)
            trial.error = None
            trial.state = "PENDING"
            self.queue.appendleft(trial.request_id)
            return
        trial.state = "ERROR"
        trial.end_time = time.time()
        self.on_event("error", trial, {"error": trial.error})
        self._apply(self.searcher.on_trial_exited_early(
            trial.request_id, searchers.ExitedReason.ERRORED))
        self._save()

    def _complete(self, trial: TrialRecord, report_close: bool) -> None:
        was_running = trial.state == "RUNNING"
        trial.state = "COMPLETED"
        trial.end_time = time.time()
        self.on_event("closed", trial, {"was_running": was_running})
        if report_close:
            self._apply(self.searcher.on_trial_closed(trial.request_id))
        self._save()

    def _kill_all(self) -> None:
        for t in self.trials.values():
            if t.process is not None and t.process.is_alive():
                t.process.terminate()
                t.process.join(5)
                if t.process.is_alive():
                    t.process.kill()
            if t.state in ("RUNNING", "PENDING"):
                t.state = "CANCELED"

    # ------------------------------------------------------------------ records

    def _garbage_collect(self) -> None:
        policy = self.config.get("checkpoint_storage") or self.storage_config
        records = []
        for c in self.checkpoints.values():
            vm = c.get("validation_metrics") or {}
            metric = vm.get(self.cfg.metric)
            records.append(CheckpointRecord(c["uuid"], c["trial_id"], c["time"],
                                            None if metric is None else float(metric)))
        protected = {t.warm_start for t in self.trials.values() if t.warm_start}
        keep = checkpoints_to_keep(
            records,
            int(policy.get("save_experiment_best", 0)),
            int(policy.get("save_trial_best", 1)),
            int(policy.get("save_trial_latest", 1)),
            self.cfg.smaller_is_better,
            protected,
        )
        for uuid, c in self.checkpoints.items():
            if uuid not in keep and c["state"] == "COMPLETED":
                self.storage.delete(uuid)
                c["state"] = "DELETED"

    def best_trial(self) -> Optional[TrialRecord]:
        scored = [t for t in self.trials.values() if t.best_metric is not None]
        if not scored:
            return None
        return min(scored, key=lambda t: (self._signed(t.best_metric), t.trial_id))  # type: ignore

    def best_checkpoint(self) -> Optional[str]:
        live = [c for c in self.checkpoints.values()
                if c["state"] == "COMPLETED" and (c.get("validation_metrics") or {}).get(self.cfg.metric) is not None]
        if not live:
            live = [c for c in self.checkpoints.values() if c["state"] == "COMPLETED"]
            return max(live, key=lambda c: c["time"])["uuid"] if live else None
        best = min(live, key=lambda c: (self._signed(c["validation_metrics"][self.cfg.metric]), -c["time"]))
        return best["uuid"]

    def _save(self) -> None:
        self.store.save_state({
            "id": self.experiment_id,
            "state": self.state,
            "config": self.config,
            "model_dir": self.model_dir,
            "start_time": self.start_time,
            "end_time": time.time() if self.state in ("COMPLETED", "ERROR", "CANCELED") else None,
            "progress": self.searcher.progress(),
            "trials": [t.summary() for t in sorted(self.trials.values(), key=lambda t: t.trial_id)],
            "checkpoints": list(self.checkpoints.values()),
            "checkpoint_storage": self.storage_config,
            "best_checkpoint": self.best_checkpoint(),
            "shutdown_reason": getattr(self.shutdown, "reason", "") if self.shutdown else "",
        })

    def _result(self, reason: str) -> ExperimentResult:
        best_uuid = self.best_checkpoint()
        return ExperimentResult(
            experiment_id=self.experiment_id,
            state=self.state,
            trials=sorted(self.trials.values(), key=lambda t: t.trial_id),
            best_trial=self.best_trial(),
            best_checkpoint=best_uuid,
            best_checkpoint_path=self.storage.describe(best_uuid) if best_uuid else None,
            directory=self.store.dir,
            reason=reason,
        )
