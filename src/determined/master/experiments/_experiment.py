"""One experiment in the master: an adapter around :class:`~determined.engine.ExperimentCore`.

The core decides (trial states, operation queues, restarts, best metric, GC); this
adapter hands the core's record effects to its :class:`~determined.master.db.RecordEffects`
and carries the process effects out through its :class:`ExperimentHost`. Every method
is called with the experiments' lock held (the ``Experiments`` service takes it),
except the two that touch no state: :meth:`ExperimentRun.store_training` and
:meth:`ExperimentRun.checkpoint_resources`. After every event that changes the core,
its whole snapshot is saved, so a restarted master continues exactly there.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional, Tuple

from determined import engine
from determined.config import ExperimentConfig
from determined.master._lifecycle import event
from determined.master.db import RecordEffects, checkpoint_resources, restore_location
from determined.master.experiments._failure import process_failure
from determined.master.experiments._host import ExperimentHost
from determined.master.experiments._trial import TrialHandle

__all__ = ["ExperimentRun"]

logger = logging.getLogger("determined.master")


class ExperimentRun:
    """The live part of a non-terminal experiment.

    Args:
        records: writes the experiment's records (its ``experiment_id`` is this run's).
        host: the master as this run sees it.
        config: the validated experiment config.
        state: the experiment's stored state (a run without a snapshot starts in it).
        model_dir: the unpacked context directory.
        storage: the experiment's checkpoint storage.
        source_checkpoint: (uuid, path) every trial without a searcher parent
            warm-starts from (``resolve_source_checkpoint``).
        capacity: how many trials the cluster can run at once now.
    """

    def __init__(self, records: RecordEffects, host: ExperimentHost, config: Dict[str, Any],
                 state: str, model_dir: str, storage: Any,
                 source_checkpoint: Optional[Tuple[str, str]] = None,
                 capacity: Optional[int] = None):
        self.records = records
        self.host = host
        self.store = records.store
        self.id = records.experiment_id
        self.config = config
        self.cfg = ExperimentConfig(config)
        self.model_dir = model_dir
        self.storage_config = config["checkpoint_storage"]
        self.storage = storage
        self.source_path = source_checkpoint[1] if source_checkpoint else None
        self.core = engine.ExperimentCore(
            config, source_checkpoint=source_checkpoint[0] if source_checkpoint else None,
            capacity=capacity)
        self.trials: Dict[int, TrialHandle] = {}  # by request id
        self._initial_state = state
        self._loaded = False  # from a snapshot (load)
        self._progress_at = 0.0
        records.snapshot_extra["source_checkpoint_path"] = self.source_path
        records.on_created = self._created
        records.on_trial_state = lambda tid, state: event(
            "trial %s of experiment %s %s", tid, self.id, state)
        records.on_experiment_state = self._experiment_state
        self._wake = False

    @property
    def state(self) -> str:
        return self.core.state.value

    # ------------------------------------------------------------------ start, restore

    def start(self, activate: bool = False) -> None:
        self._do(self.core.start(activate=activate))

    def load(self) -> None:
        """Rebuild the core from the saved snapshot after a master restart (none saved:
        :meth:`recover` starts the run afresh). Raises if the snapshot is unusable."""
        snap = self.store.get_searcher_snapshot(self.id)
        if snap is None:
            return
        self._loaded = True
        self.core = engine.ExperimentCore.restore(self.config, snap.snapshot)
        self.source_path = snap.snapshot.get("source_checkpoint_path")
        self.records.snapshot_extra["source_checkpoint_path"] = self.source_path
        for rec in self.store.list_trials(self.id):
            rid = int(rec.request_id)
            if rid in self.core.trials:
                self._register(rid, rec.id)

    def recover(self) -> None:
        """Continue after :meth:`load`: trials whose processes were lost roll back to
        their latest checkpoints."""
        if not self._loaded:
            self.start(activate=self._initial_state == "ACTIVE")
            return
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

    def abort(self, reason: str) -> None:
        """End the run as ERROR now because the master cannot go on with it."""
        self._do(self.core.abort("ERROR", reason))

    def _register(self, request_id: int, trial_id: int) -> TrialHandle:
        h = TrialHandle(trial_id, self.core.trial(request_id))
        self.trials[request_id] = h
        self.records.trial_ids[request_id] = trial_id
        self.host.trial_added(self, h)
        return h

    def _created(self, request_id: int, trial_id: int) -> None:
        h = self._register(request_id, trial_id)
        event("trial %s of experiment %s created (hyperparameters %s)", trial_id, self.id,
              h.hparams)

    # ------------------------------------------------------------------ effects

    def _do(self, effects: List[Any]) -> None:
        """Carry out the core's effects: records, then process effects."""
        self._wake = False
        engine.dispatch(self.records.apply(effects, self.core), self)
        if self._wake:
            self.host.wake(self.id)

    def _experiment_state(self, state: str) -> None:
        event("experiment %s %s", self.id, state)
        self._wake = True

    # process effects (engine.dispatch calls these)

    def launch_trial(self, e: engine.LaunchTrial) -> None:
        self._wake = True

    stop_trial = wake_trial = launch_trial

    def kill_process(self, e: engine.KillTrial) -> None:
        self.host.kill_process(self.records.tid(e.request_id))

    def finish_experiment(self, e: engine.FinishExperiment) -> None:
        self.host.finished(self)
        if e.reason:
            logger.info("experiment %s ended %s: %s", self.id, e.state, e.reason)

    def refresh_progress(self, force: bool = False) -> None:
        """Store the search's progress, counting what trials have trained so far (at
        most once a second unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._progress_at < 1.0:
            return
        self._progress_at = now
        self.records.write_progress(self.core.progress())

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
        return restore_location(self.core, t.request_id, self.storage, self.source_path)

    def started(self, t: TrialHandle) -> None:
        self._do(self.core.trial_started(t.request_id))

    def stop(self, t: TrialHandle) -> None:
        """Preempt or suspend: the trial checkpoints and gives its slot back."""
        self._do(self.core.stop_trial(t.request_id))

    def capacity_changed(self, capacity: int) -> None:
        """Tell the searcher how many trials can run at once (the core ignores no
        change; none while no agent has slots, e.g. remote agents reconnecting after a
        master restart)."""
        if capacity >= 1:
            self._do(self.core.capacity_changed(capacity))

    def suspend_idle(self) -> None:
        self._do(self.core.suspend_idle())

    # ------------------------------------------------------------------ runner requests

    def must_stop(self, t: TrialHandle) -> bool:
        return self.core.should_stop(t.request_id)

    def next_op(self, t: TrialHandle) -> Optional[Dict[str, Any]]:
        """The trial's next op (a CLOSE marked ``stop`` to make it checkpoint and
        exit), or None if there is none yet."""
        answer = self.core.next_op(t.request_id)
        if answer is None:
            # The scheduler may suspend this idle trial to free its slot. Waking the
            # runners here would wake this one too: it would poll in a busy loop.
            self.host.wake_scheduler()
            return None
        return answer.to_dict()

    def trained(self, t: TrialHandle,
                reports: List[Tuple[int, Dict[str, Any]]]) -> Dict[int, List[Any]]:
        """Tell the core of training reports; the rows to store (:meth:`store_training`)."""
        for batches, metrics in reports:
            self._do(self.core.trial_trained(t.request_id, batches, metrics))
        return self.records.take_training()

    def store_training(self, rows: Dict[int, List[Any]]) -> None:
        """Write training rows, one transaction per trial (no lock needed: rows only add)."""
        self.records.write_training(rows)

    def validation(self, t: TrialHandle, batches: int, report: Dict[str, Any]) -> None:
        self._do(self.core.trial_validated(t.request_id, batches, report))

    def checkpoint_resources(self, uuid: str) -> Dict[str, int]:
        """A reported checkpoint's file sizes (walks its files: no lock needed)."""
        return checkpoint_resources(self.storage, uuid)

    def checkpoint(self, t: TrialHandle, batches: int, uuid: str, resources: Dict[str, int],
                   meta: Dict[str, Any]) -> None:
        """Register a checkpoint (``resources`` from :meth:`checkpoint_resources`)."""
        self._do(self.core.trial_checkpointed(
            t.request_id, batches, uuid, resources, str(meta.get("framework", "")),
            str(meta.get("format", ""))))

    def validate_op_completed(self, t: TrialHandle, report: Dict[str, Any]) -> None:
        self._do(self.core.validate_op_completed(t.request_id, report))

    def early_exit(self, t: TrialHandle) -> None:
        self._do(self.core.early_exit(t.request_id))

    def is_best(self, value: float) -> bool:
        return self.core.is_best(value)

    def script_progress(self, t: TrialHandle, units: float) -> None:
        self._do(self.core.trial_progressed(t.request_id, units))

    def script_exited(self, t: TrialHandle, code: int) -> None:
        self._do(self.core.script_exited(t.request_id, code))

    # ------------------------------------------------------------------ process exits

    def process_exited(self, t: TrialHandle, code: int) -> None:
        """The trial's process ended with ``code`` (its output already stored: a failure
        names why from its last lines, ``_failure.process_failure``)."""
        signal = -code if code < 0 else None
        message = process_failure(self.store, t.trial_id) if code > 0 else ""
        self._do(self.core.trial_exited(t.request_id, code=None if signal else code,
                                        signal=signal, message=message))

    # ------------------------------------------------------------------ user actions

    def activate(self) -> None:
        self._do(self.core.activate())

    def pause(self) -> None:
        self._do(self.core.pause())

    def cancel(self, kill: bool = False) -> None:
        self._do(self.core.cancel(kill=kill))

    def kill_trial(self, t: TrialHandle) -> None:
        self._do(self.core.kill_trial(t.request_id))
