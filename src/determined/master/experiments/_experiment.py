"""One experiment's lifecycle in the master (SPEC 1.3-1.6).

An :class:`ExperimentRun` feeds its searcher the events its trials report, queues
the searcher's operations per trial, and moves the experiment and its trials through
their states. It mirrors the local driver (``determined.local._driver``) but is
event-driven: every method is called with the master's lock held, by API handlers
and by the resource manager's exit callbacks. Everything that must survive a crash
of the master goes to the :class:`~determined.master.db.Store`: trials, metrics,
checkpoints, and after every searcher event one snapshot holding the searcher's
state and each trial's queued operations.
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from determined import searcher as searchers
from determined.common.trial_ops import trial_op
from determined.config import ExperimentConfig, Unit
from determined.harness._host import OpKind, TrialOp
from determined.master.db import Store
from determined.master.experiments._trial import (
    CANCELED,
    COMPLETED,
    ERROR,
    IDLE,
    PENDING,
    RUNNING,
    TrialState,
)
from determined.storage import CheckpointRecord, build_storage, checkpoints_to_keep

if TYPE_CHECKING:
    from determined.master._core import Master

__all__ = ["ExperimentRun", "EXIT_USER_ERROR"]

EXIT_USER_ERROR = 65  # determined.harness._rest_host.EXIT_USER_ERROR
_STOPPING = {"STOPPING_COMPLETED": "COMPLETED", "STOPPING_CANCELED": "CANCELED",
             "STOPPING_ERROR": "ERROR"}


class ExperimentRun:
    """The live part of a non-terminal experiment."""

    def __init__(self, master: "Master", experiment_id: int, config: Dict[str, Any],
                 state: str, model_dir: str):
        self.master = master
        self.store: Store = master.store
        self.id = experiment_id
        self.config = config
        self.cfg = ExperimentConfig(config)
        self.state = state
        self.model_dir = model_dir
        self.storage_config = config["checkpoint_storage"]
        self.storage = build_storage(self.storage_config)
        self.searcher = searchers.make_searcher(config)
        self.trials: Dict[int, TrialState] = {}  # by request id
        self.shutdown: Optional[searchers.Shutdown] = None
        self.best_value: Optional[float] = None  # signed: smaller is better
        self.events = 0
        self.killed = False
        self._progress = -1.0  # as last stored
        self._progress_at = 0.0

    # ------------------------------------------------------------------ start, restore

    def start(self) -> None:
        self._apply(self.searcher.start())
        self._event()

    def restore(self) -> None:
        """Continue after a master restart: searcher from its snapshot, trials rolled
        back to their latest checkpoints."""
        snap = self.store.get_searcher_snapshot(self.id)
        if snap is None:
            self.start()
            return
        data = snap.snapshot
        self.searcher = searchers.Searcher.restore(self.config, data["searcher"])
        self.events = snap.events_applied
        self.best_value = data.get("best_value")
        if data.get("shutdown"):
            self.shutdown = searchers.Shutdown.from_dict(data["shutdown"])
        saved = data.get("trials", {})
        for rec in self.store.list_trials(self.id):
            t = TrialState(rec.id, int(rec.request_id), rec.hparams, rec.seed,
                           warm_start=rec.warm_start_checkpoint, restarts=rec.restarts,
                           best_metric=rec.best_validation, arrival=rec.id)
            t.load_snapshot(saved.get(rec.request_id, {}))
            self.trials[t.request_id] = t
            if rec.state != "ACTIVE":
                t.state = rec.state
                continue
            latest = self.store.latest_checkpoint(rec.id)
            t.checkpoint_batches = latest.total_batches if latest else 0
            t.latest_checkpoint = latest.uuid if latest else None
            self.store.rollback_trial(rec.id, t.checkpoint_batches)
            t.batches = t.checkpoint_batches
            t.requeue_after_exit(self._last_train_done(t))
            if t.ops and t.ops[0].kind is OpKind.CLOSE and t.latest_checkpoint:
                t.ops.clear()
                self._complete(t, report_close=True)
            else:
                t.state = PENDING if t.ops else IDLE
        self._save_snapshot()

    # ------------------------------------------------------------------ searcher ops

    def _apply(self, ops: List[Any]) -> None:
        for op in ops:
            if isinstance(op, searchers.Create):
                self._create(op)
            elif isinstance(op, searchers.Shutdown):
                self.shutdown = op
            else:
                t = self.trials[op.request_id]
                t.ops.append(trial_op(op))
                if t.state == IDLE:
                    if t.ops[0].kind is OpKind.CLOSE:
                        t.ops.clear()  # its last checkpoint is its final state
                        self._complete(t, report_close=True)
                        continue
                    t.state = PENDING
        self.master.changed()

    def _create(self, op: Any) -> None:
        warm = None
        if op.checkpoint_of is not None:
            warm = self.trials[op.checkpoint_of].latest_checkpoint
        trial_id = self.store.create_trial(self.id, str(op.request_id), op.hparams,
                                           op.trial_seed, warm_start_checkpoint=warm)
        t = TrialState(trial_id, op.request_id, op.hparams, op.trial_seed, op.checkpoint_of,
                       warm_start=warm, arrival=trial_id)
        self.trials[op.request_id] = t
        self._apply(self.searcher.on_trial_created(op.request_id))

    def _event(self) -> None:
        """A searcher event was applied: persist it with the trials' queues."""
        self.events += 1
        self._save_snapshot()
        self.refresh_progress(force=True)

    def refresh_progress(self, force: bool = False) -> None:
        """Store the search's progress, counting what trials have trained so far (at
        most once a second unless ``force``; call with the master's lock held)."""
        now = time.monotonic()
        if not force and now - self._progress_at < 1.0:
            return
        self._progress_at = now
        unit, gbs_key = self.searcher.unit, "global_batch_size"
        trained: Dict[int, int] = {}
        for r, t in self.trials.items():
            batches = t.batches
            if unit is Unit.RECORDS:
                batches *= int(t.hparams.get(gbs_key, 1))
            elif unit is Unit.EPOCHS:
                per_epoch = self.cfg.records_per_epoch
                batches = batches * int(t.hparams.get(gbs_key, 1)) // per_epoch if per_epoch else 0
            trained[r] = batches
        progress = round(self.searcher.progress(trained), 4)
        if progress != self._progress:
            self._progress = progress
            self.store.update_experiment(self.id, progress=progress)

    def _save_snapshot(self) -> None:
        self.store.save_searcher_snapshot(self.id, {
            "searcher": self.searcher.snapshot(),
            "trials": {str(r): t.snapshot() for r, t in self.trials.items()},
            "shutdown": self.shutdown.to_dict() if self.shutdown else None,
            "best_value": self.best_value,
        }, self.events)

    # ------------------------------------------------------------------ scheduling view

    def schedulable(self) -> List[TrialState]:
        """Trials that want a slot now."""
        if self.state != "ACTIVE":
            return []
        return [t for t in self.trials.values() if t.state == PENDING and self._parent_ready(t)]

    def running(self) -> List[TrialState]:
        return [t for t in self.trials.values() if t.state == RUNNING]

    def _parent_ready(self, t: TrialState) -> bool:
        if t.checkpoint_of is None:
            return True
        parent = self.trials[t.checkpoint_of]
        pending = any(o.kind is OpKind.CHECKPOINT for o in parent.ops) or (
            parent.current_op is not None and parent.current_op.kind is OpKind.CHECKPOINT
            and parent.state == RUNNING
        )
        return not pending and parent.latest_checkpoint is not None

    def restore_path(self, t: TrialState) -> Any:
        """(checkpoint path or None, warm) for a trial about to start."""
        if t.latest_checkpoint:
            return self.storage.describe(t.latest_checkpoint), False
        if t.checkpoint_of is not None:
            parent = self.trials[t.checkpoint_of].latest_checkpoint
            if parent:
                t.warm_start = t.warm_start or parent
                return self.storage.describe(parent), True
        if t.warm_start:
            return self.storage.describe(t.warm_start), True
        return None, False

    def _last_train_done(self, t: TrialState) -> bool:
        """Whether ``t``'s latest checkpoint already holds all of its last Train."""
        if t.last_train is None or not t.latest_checkpoint:
            return False
        try:
            target = self.cfg.length_to_batches(t.last_train, int(t.hparams["global_batch_size"]))
        except (KeyError, TypeError, ValueError):
            return False
        return t.checkpoint_batches >= target

    def started(self, t: TrialState) -> None:
        t.state = RUNNING
        t.waiting = t.stop = t.suspending = False
        t.retryable = True
        t.error = None

    # ------------------------------------------------------------------ runner requests

    def must_stop(self, t: TrialState) -> bool:
        return t.stop or self.state != "ACTIVE"

    def next_op(self, t: TrialState) -> Optional[Dict[str, Any]]:
        """The trial's next op, CLOSE to make it stop, or None if there is none yet."""
        if t.state != RUNNING:
            return TrialOp(OpKind.CLOSE).to_dict()
        if not t.waiting and t.current_op is not None and t.current_op.kind is not OpKind.CLOSE:
            t.current_op = None  # the runner asks again only once the op is done
        if self.must_stop(t):
            t.suspending = True
            t.waiting = False
            return TrialOp(OpKind.CLOSE).to_dict()
        if t.ops:
            t.waiting = False
            t.current_op = t.ops.popleft()
            if t.current_op.kind is OpKind.TRAIN:
                t.last_train = t.current_op.length
            return t.current_op.to_dict()
        if not t.waiting:
            t.waiting = True
            self.master.changed()
        return None

    def training(self, t: TrialState, batches: int, metrics: Dict[str, Any]) -> None:
        """Store a training report. Needs no lock: it touches the database and the
        trial's own counter only, so reports of many trials are committed together."""
        self.store.add_training_metrics(t.trial_id, batches, metrics.get("avg_metrics") or {},
                                        metrics.get("batch_metrics"), set_progress=True,
                                        num_inputs=metrics.get("num_inputs"))
        t.batches = batches

    def training_many(self, t: TrialState, reports: List[Tuple[int, Dict[str, Any]]]) -> None:
        """Store several training reports of one trial at once (no lock needed)."""
        if not reports:
            return
        self.store.add_training_metrics_many(t.trial_id, [
            (batches, metrics.get("avg_metrics") or {}, metrics.get("batch_metrics"),
             metrics.get("num_inputs"))
            for batches, metrics in reports
        ])
        t.batches = reports[-1][0]

    def validation(self, t: TrialState, batches: int, metrics: Dict[str, Any]) -> None:
        values = metrics.get("validation_metrics") or {}
        self.store.add_validation_metrics(t.trial_id, batches, values,
                                          num_inputs=metrics.get("num_inputs"))
        raw = values.get(self.cfg.metric)
        if isinstance(raw, (int, float)):
            signed = self._signed(raw)
            if self.best_value is None or signed < self.best_value:
                self.best_value = signed
            if t.best_metric is None or signed < self._signed(t.best_metric):
                t.best_metric = float(raw)
                self.store.update_trial(t.trial_id, best_validation=t.best_metric)

    def checkpoint(self, t: TrialState, batches: int, uuid: str, meta: Dict[str, Any]) -> None:
        resources: Dict[str, int] = {}
        try:
            root = self.storage.describe(uuid)
            for dirpath, _, files in os.walk(root):
                for name in files:
                    path = os.path.join(dirpath, name)
                    resources[os.path.relpath(path, root)] = os.path.getsize(path)
        except Exception:  # describe() of a non-local backend: sizes unknown
            pass
        self.store.add_checkpoint(uuid, t.trial_id, batches, resources, {},
                                  str(meta.get("framework", "")), str(meta.get("format", "")))
        t.latest_checkpoint, t.checkpoint_batches = uuid, batches
        self.store.update_trial(t.trial_id, latest_checkpoint=uuid, total_batches=batches)
        self.master.changed()  # a warm-start child may be waiting for it

    def validate_op_completed(self, t: TrialState, metrics: Dict[str, Any]) -> None:
        if t.current_op is not None and t.current_op.kind is OpKind.VALIDATE:
            t.current_op = None  # done: never replay it after a restart
        self._apply(self.searcher.on_validation_completed(
            t.request_id, metrics.get("validation_metrics") or {}))
        self._event()

    def early_exit(self, t: TrialState) -> None:
        t.exit_reported = True
        self._apply(self.searcher.on_trial_exited_early(
            t.request_id, searchers.ExitedReason.USER_REQUESTED_STOP))
        self._event()

    def is_best(self, value: float) -> bool:
        return self.best_value is None or self._signed(value) <= self.best_value

    def _signed(self, value: float) -> float:
        value = float(value)
        if math.isnan(value):
            return math.inf
        return value if self.cfg.smaller_is_better else -value

    # ------------------------------------------------------------------ process exits

    def process_exited(self, t: TrialState, code: int) -> None:
        events_before = self.events
        closed = t.current_op is not None and t.current_op.kind is OpKind.CLOSE
        t.waiting = False
        if self.state == "STOPPING_CANCELED":
            self._end_trial(t, CANCELED)
        elif t.killed:
            self._end_trial(t, CANCELED)
            if not t.exit_reported:
                t.exit_reported = True
                self._apply(self.searcher.on_trial_exited_early(
                    t.request_id, searchers.ExitedReason.USER_REQUESTED_STOP))
                self._event()
        elif code == 0 and not closed and not t.exit_reported:
            # Stopped as asked (pause, preemption, suspension): resume later.
            t.suspending = t.stop = False
            t.batches = t.checkpoint_batches
            t.requeue_after_exit(self._last_train_done(t))
            t.state = PENDING if t.ops else IDLE
        elif code == 0:
            self._complete(t, report_close=closed and not t.exit_reported)
        else:
            self._failed(t, code)
        if self.events == events_before:  # a searcher event saved one already
            self._save_snapshot()
        self.maybe_finish()

    def _failed(self, t: TrialState, code: int) -> None:
        t.retryable = code != EXIT_USER_ERROR  # user-code errors would only fail again
        t.error = f"trial process exited with code {code}"
        if t.retryable and t.restarts < self.cfg.max_restarts and not self.killed:
            t.restarts += 1
            self.store.rollback_trial(t.trial_id, t.checkpoint_batches)
            self.store.update_trial(t.trial_id, restarts=t.restarts)
            t.batches = t.checkpoint_batches
            t.requeue_after_exit(self._last_train_done(t))
            t.state = PENDING
            return
        self._end_trial(t, ERROR)
        if not t.exit_reported:
            t.exit_reported = True
            self._apply(self.searcher.on_trial_exited_early(
                t.request_id, searchers.ExitedReason.ERRORED))
            self._event()

    def _complete(self, t: TrialState, report_close: bool) -> None:
        self._end_trial(t, COMPLETED)
        if report_close:
            self._apply(self.searcher.on_trial_closed(t.request_id))
            self._event()

    def _end_trial(self, t: TrialState, state: str) -> None:
        t.state = state
        t.ops.clear()
        self.store.update_trial(t.trial_id, state=state)
        self.store.revoke_trial_tokens(t.trial_id)

    # ------------------------------------------------------------------ user actions

    def activate(self) -> None:
        self.store.set_experiment_state(self.id, "ACTIVE")
        self.state = "ACTIVE"
        self.master.changed()

    def pause(self) -> None:
        self.store.set_experiment_state(self.id, "PAUSED")
        self.state = "PAUSED"
        for t in self.running():
            t.stop = True
        self.master.changed()

    def cancel(self, kill: bool = False) -> None:
        if self.state in _STOPPING:
            if kill and not self.killed:
                self.killed = True
                for t in self.running():
                    self.master.kill_trial(t.trial_id)
            return
        self.store.set_experiment_state(self.id, "STOPPING_CANCELED")
        self.state = "STOPPING_CANCELED"
        self.killed = kill
        for t in self.running():
            t.stop = True
            if kill:
                self.master.kill_trial(t.trial_id)
        self.master.changed()
        self.maybe_finish()

    def kill_trial(self, t: TrialState) -> None:
        if t.state == RUNNING:
            t.killed = True
            self.master.kill_trial(t.trial_id)
        elif t.alive:
            self._end_trial(t, CANCELED)
            self._apply(self.searcher.on_trial_exited_early(
                t.request_id, searchers.ExitedReason.USER_REQUESTED_STOP))
            self._event()
            self.maybe_finish()

    # ------------------------------------------------------------------ the end

    def maybe_finish(self) -> bool:
        """Move to STOPPING_* / a terminal state when the time has come; True at the end."""
        if self.running():
            return False
        if self.state in ("ACTIVE", "PAUSED"):
            if self.shutdown is not None:
                target = "STOPPING_ERROR" if self.shutdown.failure else "STOPPING_COMPLETED"
            elif self.state == "ACTIVE" and not self.schedulable() and not any(
                t.state == PENDING for t in self.trials.values()
            ) and any(t.state == IDLE for t in self.trials.values()):
                target = "STOPPING_ERROR"  # every live trial waits for work never sent
            else:
                return False
            self.store.set_experiment_state(self.id, target)
            self.state = target
        if self.state not in _STOPPING:
            return False
        final = _STOPPING[self.state]
        for t in self.trials.values():
            if t.alive:
                self._end_trial(t, CANCELED)
        self._garbage_collect()
        self.store.set_experiment_state(self.id, final)
        self.state = final
        self.master.finished(self)
        return True

    def _garbage_collect(self) -> None:
        policy = self.storage_config
        records, protected = [], {t.warm_start for t in self.trials.values() if t.warm_start}
        ckpts = self.store.list_checkpoints(experiment_id=self.id, states=["COMPLETED"])
        for c in ckpts:
            metric = (c.validation or {}).get(self.cfg.metric)
            records.append(CheckpointRecord(c.uuid, c.trial_id, c.end_time.timestamp()
                                            if c.end_time else time.time(),
                                            None if metric is None else float(metric)))
        keep = checkpoints_to_keep(
            records, int(policy.get("save_experiment_best", 0)),
            int(policy.get("save_trial_best", 1)), int(policy.get("save_trial_latest", 1)),
            self.cfg.smaller_is_better, protected,
        )
        for c in ckpts:
            if c.uuid not in keep:
                try:
                    self.storage.delete(c.uuid)
                except Exception as e:
                    print(f"det-master: could not delete checkpoint {c.uuid}: {e}")
                    continue
                self.store.set_checkpoint_state(c.uuid, "DELETED")
