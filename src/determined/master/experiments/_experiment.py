"""One experiment in the master: an adapter around :class:`~determined.engine.ExperimentCore`.

The core decides (trial states, operation queues, restarts, best metric, GC); this
adapter carries its effects out against the :class:`~determined.master.db.Store`, the
scheduler and the resource manager. Methods that change state are called with the
master's lock held (API handlers, exit callbacks, the scheduler); training reports
take it only to update the core, and store their rows outside it. After every event
that changes the core, its whole snapshot is saved, so a restarted master continues
exactly there.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from determined import engine
from determined.common.trial_ops import trial_op
from determined.config import ExperimentConfig
from determined.master._lifecycle import event
from determined.master.db import Store
from determined.master.db._types import RawJSON, compact_json
from determined.master.experiments._trial import TrialHandle
from determined.storage import build_storage

if TYPE_CHECKING:
    from determined.master._core import Master

__all__ = ["ExperimentRun"]

logger = logging.getLogger("determined.master")

_TERMINAL_TRIAL = {"COMPLETED", "CANCELED", "ERROR"}


class ExperimentRun:
    """The live part of a non-terminal experiment."""

    def __init__(self, master: "Master", experiment_id: int, config: Dict[str, Any],
                 state: str, model_dir: str, source_checkpoint: Optional[str] = None,
                 capacity: Optional[int] = None):
        self.master = master
        self.store: Store = master.store
        self.id = experiment_id
        self.config = config
        self.cfg = ExperimentConfig(config)
        self.model_dir = model_dir
        self.storage_config = config["checkpoint_storage"]
        self.storage = build_storage(self.storage_config)
        self.core = engine.ExperimentCore(config, source_checkpoint=source_checkpoint,
                                          capacity=capacity)
        self.trials: Dict[int, TrialHandle] = {}  # by request id
        self._initial_state = state
        self._progress = -1.0  # as last stored
        self._progress_at = 0.0
        self._pending_deletes: List[str] = []
        self._snapshot_json = _SnapshotJSON()

    # ------------------------------------------------------------------ views

    @property
    def state(self) -> str:
        return self.core.state.value

    @property
    def searcher(self) -> Any:
        return self.core.searcher

    @property
    def killed(self) -> bool:
        return self.core.killed

    @property
    def shutdown(self) -> Any:
        return self.core.shutdown

    # ------------------------------------------------------------------ start, restore

    def start(self, activate: bool = False) -> None:
        self._do(self.core.start(activate=activate))

    def restore(self) -> None:
        """Continue after a master restart from the saved snapshot: trials whose
        processes were lost roll back to their latest checkpoints."""
        snap = self.store.get_searcher_snapshot(self.id)
        if snap is None:
            self.start(activate=self._initial_state == "ACTIVE")
            return
        self.core = engine.ExperimentCore.restore(self.config, snap.snapshot)
        for rec in self.store.list_trials(self.id):
            rid = int(rec.request_id)
            if rid in self.core.trials:
                self._register(rid, rec.id)
        latest: Dict[int, Tuple[str, int]] = {}
        for rid, h in self.trials.items():
            # The core treats every process of the old master as lost and rolls its
            # trial back to the latest checkpoint: a process that survived (on a remote
            # agent) must not report anything more, or its later reports and
            # checkpoints would mix with the rolled-back records.
            self.store.revoke_trial_tokens(h.trial_id)
            c = self.store.latest_checkpoint(h.trial_id)
            if c is not None:
                latest[rid] = (c.uuid, c.total_batches)
        self._do(self.core.recover(latest))

    def _register(self, request_id: int, trial_id: int) -> TrialHandle:
        h = TrialHandle(trial_id, self.core.trial(request_id))
        self.trials[request_id] = h
        self.master.trials[trial_id] = (self, h)
        return h

    # ------------------------------------------------------------------ effects

    def _do(self, effects: List[Any]) -> None:
        """Carry out the core's effects (lock held)."""
        snapshot = wake = False
        for e in effects:
            if isinstance(e, engine.CreateTrial):
                trial_id = self.store.create_trial(self.id, str(e.request_id), e.hparams, e.seed,
                                                   warm_start_checkpoint=e.warm_start)
                self._register(e.request_id, trial_id)
                event("trial %s of experiment %s created (hyperparameters %s)", trial_id,
                      self.id, e.hparams)
            elif isinstance(e, engine.StoreMetrics):
                self._store_metrics(e, e.metrics)
            elif isinstance(e, engine.RollbackMetrics):
                orphans = self.store.rollback_trial(self._tid(e.request_id), e.batches)
                self._pending_deletes.extend(orphans)
            elif isinstance(e, engine.UpdateTrial):
                fields = dict(e.fields)
                if fields:
                    self.store.update_trial(self._tid(e.request_id), **fields)
                if "state" in fields:
                    event("trial %s of experiment %s %s", self._tid(e.request_id), self.id,
                          fields["state"])
                if fields.get("state") in _TERMINAL_TRIAL:
                    self.store.revoke_trial_tokens(self._tid(e.request_id))
            elif isinstance(e, engine.TrialLog):
                self.store.add_logs(self._tid(e.request_id), [f"[determined] {e.line}"])
            elif isinstance(e, engine.KillTrial):
                self.master.kill_trial(self._tid(e.request_id))
            elif isinstance(e, (engine.LaunchTrial, engine.StopTrial, engine.WakeTrial)):
                wake = True
            elif isinstance(e, engine.SetExperimentState):
                self.store.set_experiment_state(self.id, e.state)
                event("experiment %s %s", self.id, e.state)
                wake = True
            elif isinstance(e, engine.DeleteCheckpoint):
                self._pending_deletes.append(e.uuid)
                self.store.set_checkpoint_state(e.uuid, "DELETED")
            elif isinstance(e, engine.RegisterCheckpoint):
                pass  # stored by checkpoint() with its file sizes, before the core heard it
            elif isinstance(e, engine.SaveSnapshot):
                snapshot = True
            elif isinstance(e, engine.FinishExperiment):
                snapshot = True
                self.master.finished(self)
                if e.reason:
                    logger.info("experiment %s ended %s: %s", self.id, e.state, e.reason)
        if snapshot:
            self.store.save_searcher_snapshot(
                self.id, self._snapshot_json.encode(self.core.snapshot()), self.core.events)
            self.refresh_progress(force=True)
        if wake:
            self.master.changed(self.id)
        if self._pending_deletes:
            uuids, self._pending_deletes = self._pending_deletes, []
            self.master.delete_files(self.storage, uuids)

    def _tid(self, request_id: int) -> int:
        return self.trials[request_id].trial_id

    def _store_metrics(self, e: Any, report: Dict[str, Any]) -> None:
        tid = self._tid(e.request_id)
        if e.kind == "training":
            self.store.add_training_metrics(tid, e.batches, report.get("avg_metrics") or {},
                                            report.get("batch_metrics"), set_progress=True,
                                            num_inputs=report.get("num_inputs"))
        else:
            self.store.add_validation_metrics(tid, e.batches,
                                              report.get("validation_metrics") or {},
                                              num_inputs=report.get("num_inputs"))

    def refresh_progress(self, force: bool = False) -> None:
        """Store the search's progress, counting what trials have trained so far (at
        most once a second unless ``force``; call with the master's lock held)."""
        now = time.monotonic()
        if not force and now - self._progress_at < 1.0:
            return
        self._progress_at = now
        progress = self.core.progress()
        if progress != self._progress:
            self._progress = progress
            self.store.update_experiment(self.id, progress=progress)

    # ------------------------------------------------------------------ scheduling view

    def schedulable(self) -> List[TrialHandle]:
        """Trials that want a slot now."""
        return [self.trials[r] for r in self.core.schedulable()]

    def running(self) -> List[TrialHandle]:
        """Trials with a process."""
        return [self.trials[r] for r in self.core.live()]

    def idle_running(self) -> List[TrialHandle]:
        """Trials with a process that wait for work the searcher has not sent."""
        return [self.trials[r] for r in self.core.waiting()]

    def restore_path(self, t: TrialHandle) -> Tuple[Optional[str], bool]:
        """(checkpoint path or None, warm) for a trial about to start."""
        uuid, warm = self.core.restore_point(t.request_id)
        return (self.storage.describe(uuid) if uuid else None), warm

    def started(self, t: TrialHandle) -> None:
        self._do(self.core.trial_started(t.request_id))

    def stop(self, t: TrialHandle) -> None:
        """Preempt or suspend: the trial checkpoints and gives its slot back."""
        self._do(self.core.stop_trial(t.request_id))

    def capacity_changed(self, capacity: int) -> None:
        """Tell the searcher how many trials can run at once (lock held)."""
        self._do(self.core.capacity_changed(capacity))

    def suspend_idle(self) -> None:
        self._do(self.core.suspend_idle())

    # ------------------------------------------------------------------ runner requests

    def must_stop(self, t: TrialHandle) -> bool:
        return self.core.should_stop(t.request_id)

    def next_op(self, t: TrialHandle) -> Optional[Dict[str, Any]]:
        """The trial's next op (a CLOSE marked ``stop`` to make it checkpoint and
        exit), or None if there is none yet."""
        op = self.core.next_op(t.request_id)
        if op is None:
            # The scheduler may suspend this idle trial to free its slot. Waking the
            # runners here would wake this one too: it would poll in a busy loop.
            self.master.wake_scheduler()
            return None
        out = trial_op(op).to_dict()
        if self.core.trial(t.request_id).current_op is not op:
            out["stop"] = True  # not the searcher's Close: it resumes later
        return out

    def training(self, t: TrialHandle, batches: int, metrics: Dict[str, Any]) -> None:
        """Store a training report (the lock only guards the core, not the write)."""
        self.training_many(t, [(batches, metrics)])

    def training_many(self, t: TrialHandle, reports: List[Tuple[int, Dict[str, Any]]]) -> None:
        """Store several training reports of one trial at once."""
        rows = []
        with self.master.lock:
            for batches, metrics in reports:
                for e in self.core.trial_trained(t.request_id, batches, metrics):
                    if isinstance(e, engine.StoreMetrics):
                        rows.append((e.batches, metrics.get("avg_metrics") or {},
                                     metrics.get("batch_metrics"), metrics.get("num_inputs")))
        if rows:
            self.store.add_training_metrics_many(t.trial_id, rows)

    def validation(self, t: TrialHandle, batches: int, metrics: Dict[str, Any]) -> None:
        values = metrics.get("validation_metrics") or {}
        effects = self.core.trial_validated(t.request_id, batches, values)
        for e in effects:
            if isinstance(e, engine.StoreMetrics):
                self._store_metrics(e, metrics)
        self._do([e for e in effects if not isinstance(e, engine.StoreMetrics)])

    def checkpoint(self, t: TrialHandle, batches: int, uuid: str, meta: Dict[str, Any]) -> None:
        """Register a checkpoint; walks its files first, without the master's lock."""
        engine.check_checkpoint_id(uuid)
        resources: Dict[str, int] = {}
        try:
            resources = self.storage.resources(uuid)  # file sizes, also in object stores
        except Exception as e:  # noqa: BLE001 - the checkpoint counts; sizes are a bonus
            logger.warning("checkpoint %s: could not list its files: %s", uuid, e)
        with self.master.lock:
            if uuid in self.core.checkpoints:  # a retried report: the same, or a 409
                self._same_checkpoint(t, batches, uuid, meta, resources)
                self._do(self.core.trial_checkpointed(t.request_id, batches, uuid))
                return
            self.store.add_checkpoint(uuid, t.trial_id, batches, resources, {},
                                      str(meta.get("framework", "")), str(meta.get("format", "")))
            self._do(self.core.trial_checkpointed(t.request_id, batches, uuid))

    def _same_checkpoint(self, t: TrialHandle, batches: int, uuid: str, meta: Dict[str, Any],
                         resources: Dict[str, int]) -> None:
        """EngineError (409) unless the stored checkpoint ``uuid`` is what this report
        says: the same trial, batches, framework, format and files."""
        stored = self.store.get_checkpoint(uuid)
        reported = (t.trial_id, batches, str(meta.get("framework", "")),
                    str(meta.get("format", "")), resources)
        known = (stored.trial_id, stored.total_batches, stored.framework, stored.format,
                 stored.resources)
        if reported != known:
            raise engine.EngineError(
                f"Checkpoint {uuid} was already reported with other content (trial, "
                f"batches, framework, format, files): {known[:4]} and {len(known[4])} "
                f"files, now {reported[:4]} and {len(resources)} files")

    def validate_op_completed(self, t: TrialHandle, metrics: Dict[str, Any]) -> None:
        self._do(self.core.validate_op_completed(t.request_id,
                                                 metrics.get("validation_metrics") or {}))

    def early_exit(self, t: TrialHandle) -> None:
        self._do(self.core.early_exit(t.request_id))

    def is_best(self, value: float) -> bool:
        return self.core.is_best(value)

    # ------------------------------------------------------------------ process exits

    def process_exited(self, t: TrialHandle, code: int) -> None:
        signal = -code if code < 0 else None
        self._do(self.core.trial_exited(t.request_id, code=None if signal else code,
                                        signal=signal))

    # ------------------------------------------------------------------ user actions

    def activate(self) -> None:
        self._do(self.core.activate())

    def pause(self) -> None:
        self._do(self.core.pause())

    def cancel(self, kill: bool = False) -> None:
        self._do(self.core.cancel(kill=kill))

    def kill_trial(self, t: TrialHandle) -> None:
        self._do(self.core.kill_trial(t.request_id))

    def maybe_finish(self) -> bool:
        """True once the experiment has ended (the core finishes it on its own)."""
        return self.core.finished


class _SnapshotJSON:
    """Encodes an experiment's snapshots, reusing the text of each trial entry that is
    the same object as in the previous snapshot (the core and the searcher hand out
    one frozen dict per ended trial): after every event only the live trials and the
    rest are encoded again, not hundreds of ended ones. The text equals what
    :func:`~determined.master.db._types.compact_json` gives for the same snapshot."""

    _MARKS = ("\x00det-trials\x00", "\x00det-searcher-trials\x00")

    def __init__(self) -> None:
        self._memo: Dict[int, Tuple[Any, str]] = {}  # id(entry) -> (entry, its text)

    def encode(self, snapshot: Dict[str, Any]) -> RawJSON:
        searcher = snapshot.get("searcher")
        lists = (snapshot.get("trials"), searcher.get("trials")
                 if isinstance(searcher, dict) else None)
        if not all(isinstance(entries, list) for entries in lists):
            return RawJSON(compact_json(snapshot))
        head = dict(snapshot, trials=self._MARKS[0],
                    searcher=dict(searcher, trials=self._MARKS[1]))
        text = compact_json(head)
        marks = [compact_json(m) for m in self._MARKS]
        if any(text.count(m) != 1 for m in marks):  # cannot happen with our markers
            return RawJSON(compact_json(snapshot))
        memo: Dict[int, Tuple[Any, str]] = {}
        parts = []
        for mark, entries in sorted(zip(marks, lists), key=lambda ml: text.index(ml[0])):
            before, text = text.split(mark, 1)
            parts += [before, "[", ",".join(self._entry(e, memo) for e in entries), "]"]
        self._memo = memo  # entries gone from this snapshot are forgotten
        return RawJSON("".join(parts) + text)

    def _entry(self, entry: Any, memo: Dict[int, Tuple[Any, str]]) -> str:
        known = self._memo.get(id(entry))
        encoded = known[1] if known is not None and known[0] is entry else \
            compact_json(entry)
        memo[id(entry)] = (entry, encoded)
        return encoded
