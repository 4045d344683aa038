"""The master's experiments: :class:`Experiments` owns every live run, the registry of
their trials and the lock that guards them. API routes reach experiments and trials
only through it; each run sees the master only through it (as its
:class:`~determined.master.experiments.ExperimentHost`).

Locking: ``Experiments.lock`` guards the runs, their cores and the registry. Every
public method takes it itself; the master's scheduler and process-exit callbacks hold
it while they call runs directly. Files are walked and training rows written outside
it; the records a core's decision implies are written under it, so they keep the
core's order.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from determined.master._lifecycle import event
from determined.master.db import TERMINAL_STATES, RecordEffects, Store, resolve_source_checkpoint
from determined.master.experiments._contexts import ModelDirs, check_context_quota
from determined.master.experiments._experiment import ExperimentRun
from determined.master.experiments._trial import TrialHandle
from determined.storage import build_storage

if TYPE_CHECKING:
    from determined.master._config import LimitsConfig

__all__ = ["Experiments", "LiveTrial", "NotFinishedError"]

logger = logging.getLogger("determined.master")

#: The actions ``POST /experiments/{id}/<action>`` takes on a run.
RUN_ACTIONS = ("pause", "activate", "cancel", "kill")


class LiveTrial(NamedTuple):
    """A trial of a live experiment, as a trial runner's token names it."""

    run: ExperimentRun
    trial: TrialHandle

    @property
    def trial_id(self) -> int:
        return self.trial.trial_id


class NotFinishedError(Exception):
    """The action needs a finished experiment (COMPLETED, CANCELED or ERROR)."""


class Experiments:
    """The master's live experiments.

    Args:
        store: the master's database.
        data_dir: the master's data directory (unpacked contexts lie under it).
        limits: the master config's ``limits`` (context quotas).
        capacity: how many trials of an experiment (its config) the cluster can run
            at once now.
        kill_process: kills a trial's process (by trial id).
        wake: wakes the scheduler and the long polls of one experiment's runners
            (None: of every experiment's); called with the lock held.
        wake_scheduler: asks for a scheduling pass soon.
        delete_files: deletes checkpoint files ``(storage, uuids)`` in the background.
    """

    def __init__(self, store: Store, data_dir: str, limits: "LimitsConfig", *,
                 capacity: Callable[[Dict[str, Any]], int],
                 kill_process: Callable[[int], None],
                 wake: Callable[[Optional[int]], None], wake_scheduler: Callable[[], None],
                 delete_files: Callable[[Any, List[str]], None]):
        self.store = store
        self.model_dirs = ModelDirs(data_dir)
        self._limits = limits
        self._capacity = capacity
        self.lock = threading.RLock()
        self._runs: Dict[int, ExperimentRun] = {}
        self._trials: Dict[int, LiveTrial] = {}  # by trial id
        self._kill_process = kill_process
        self._wake = wake
        self._wake_scheduler = wake_scheduler
        self._delete_files = delete_files

    # ------------------------------------------------------------------ create, restore

    def create(self, config: Dict[str, Any], model_def: bytes, activate: bool, owner: str,
               git: Optional[Dict[str, str]] = None,
               context_bytes: Optional[int] = None,
               original_config: Optional[Dict[str, Any]] = None,
               parent_id: Optional[int] = None,
               create_key: Optional[Tuple[str, str]] = None) -> int:
        """Store and start an experiment; its id. ``context_bytes``: its context's
        unpacked size, checked against the context quotas before anything is written;
        ``original_config``: the config as submitted, before defaults (kept for forks);
        ``parent_id``: the experiment it was forked from; ``create_key``: the request's
        ``(idempotency key, body digest)``, stored with it (a key the owner used
        already: ConflictError, nothing stored)."""
        if context_bytes is None:
            context_bytes = len(model_def)
        check_context_quota(self.store, self._limits, owner, context_bytes)
        source = resolve_source_checkpoint(config, self.store, build_storage)
        with self.model_dirs.staged(model_def) as staging:
            with self.lock:
                # Again: others may have stored theirs while this one unpacked.
                check_context_quota(self.store, self._limits, owner, context_bytes)
                exp_id = self.store.create_experiment(config, model_def, owner=owner,
                                                     git=git, context_bytes=context_bytes,
                                                     original_config=original_config,
                                                     parent_id=parent_id,
                                                     create_key=create_key)
                model_dir = self.model_dirs.place(staging, exp_id)
                run = self.build(exp_id, config, "PAUSED", model_dir, source_checkpoint=source,
                                 capacity=self._capacity(config))
                self.add(run)
                event("experiment %s created by %s (searcher %s)", exp_id, owner,
                      (config.get("searcher") or {}).get("name"))
                run.start(activate=activate)
                return exp_id

    def restore_unfinished(self) -> None:
        """Continue every unfinished experiment after a master restart (:meth:`restore`)."""
        self.model_dirs.remove_unfinished()
        for exp in self.store.list_experiments(include_archived=True):
            if exp.state not in TERMINAL_STATES:
                self.restore(exp)

    def build(self, experiment_id: int, config: Dict[str, Any], state: str, model_dir: str,
              source_checkpoint: Optional[Tuple[str, str]] = None,
              capacity: Optional[int] = None) -> ExperimentRun:
        """A run of a stored experiment, not yet registered (:meth:`add`)."""
        storage = build_storage(config["checkpoint_storage"])
        records = RecordEffects(self.store, experiment_id,
                                lambda uuids: self._delete_files(storage, uuids),
                                buffer_training=True)  # written outside the lock
        return ExperimentRun(records, self, config, state, model_dir, storage,
                             source_checkpoint=source_checkpoint, capacity=capacity)

    def restore(self, exp: Any) -> None:
        """Continue the stored unfinished experiment ``exp`` after a master restart. One
        whose run cannot be built (e.g. an unreadable snapshot) is marked ERROR; one that
        fails to continue is aborted by its core. Either way the reason goes to the
        master log and its trials' logs."""
        config = dict(exp.config)
        resources = dict(config.get("resources") or {})
        for key in ("weight", "priority", "max_slots"):  # live edits (det e set ...)
            value = getattr(exp, key, None)
            if value is not None:
                resources[key] = value
        config["resources"] = resources
        with self.lock:
            run = None
            try:
                # A restored run's snapshot brings the capacity it had; the master tells
                # it of agents that joined or left since.
                run = self.build(exp.id, config, exp.state,
                                 self.model_dirs.ensure(self.store, exp.id),
                                 capacity=self._capacity(config))
                run.load()
            except Exception as e:  # noqa: BLE001 - any failure isolates this experiment only
                if run is not None:
                    self.discard(run)  # the trials load() registered
                self._mark_error(exp.id, _restore_failure(exp.id, e))
                return
            self.add(run)
            try:
                run.recover()
            except Exception as e:  # noqa: BLE001
                reason = _restore_failure(exp.id, e)
                try:
                    run.abort(reason)
                except Exception as again:  # noqa: BLE001 - its records are beyond its core
                    logger.error("experiment %s: could not abort: %s", exp.id, again)
                    self.discard(run)
                    self._mark_error(exp.id, reason)

    def _mark_error(self, experiment_id: int, reason: str) -> None:
        """End as ERROR an experiment whose run cannot be built."""
        try:
            RecordEffects(self.store, experiment_id, lambda uuids: None).mark_error(reason)
        except Exception as e:  # noqa: BLE001
            logger.error("experiment %s: could not record its error: %s", experiment_id, e)

    # ------------------------------------------------------------------ the registry

    def add(self, run: ExperimentRun) -> None:
        with self.lock:
            self._runs[run.id] = run

    def discard(self, run: ExperimentRun) -> None:
        """Forget a run and its trials (it ended, or could not be restored)."""
        with self.lock:
            self._runs.pop(run.id, None)
            for t in run.trials.values():
                self._trials.pop(t.trial_id, None)

    def runs(self) -> List[ExperimentRun]:
        with self.lock:
            return list(self._runs.values())

    def is_live(self, experiment_id: int) -> bool:
        """Whether the experiment has a run (it has not ended)."""
        with self.lock:
            return experiment_id in self._runs

    def rung_table(self, experiment_id: int) -> Tuple[bool, Optional[List[Any]]]:
        """``(live, table)``: whether the experiment has a run, and then its searcher's
        brackets and rungs (``ExperimentCore.rung_table``: None without rungs)."""
        with self.lock:
            run = self._runs.get(experiment_id)
            if run is None:
                return False, None
            return True, run.core.rung_table()

    def trial(self, trial_id: int) -> Optional[LiveTrial]:
        """The live trial with this id; None once its experiment ended."""
        return self._trials.get(trial_id)  # one dict read: atomic, no lock needed

    # ------------------------------------------------------------------ ExperimentHost

    def kill_process(self, trial_id: int) -> None:
        self._kill_process(trial_id)

    def wake(self, experiment_id: Optional[int]) -> None:
        self._wake(experiment_id)

    def wake_scheduler(self) -> None:
        self._wake_scheduler()

    def trial_added(self, run: ExperimentRun, trial: TrialHandle) -> None:
        with self.lock:
            self._trials[trial.trial_id] = LiveTrial(run, trial)

    def finished(self, run: ExperimentRun) -> None:
        self.discard(run)

    # ------------------------------------------------------------------ user actions

    def act(self, experiment_id: int, action: str) -> None:
        """``pause``, ``activate``, ``cancel`` or ``kill`` an experiment. Cancelling an
        ended one does nothing; pausing or activating one raises
        IllegalTransitionError unless it is ACTIVE or PAUSED."""
        if action not in RUN_ACTIONS:
            raise ValueError(f"Expected an action in {RUN_ACTIONS}. Received: {action!r}")
        with self.lock:
            run = self._runs.get(experiment_id)
            if action in ("cancel", "kill"):
                if run is not None:
                    run.cancel(kill=action == "kill")
            elif run is None or run.state not in ("ACTIVE", "PAUSED"):
                # The store's transition table refuses it (an ended or ending experiment).
                self.store.set_experiment_state(experiment_id,
                                                "PAUSED" if action == "pause" else "ACTIVE")
            elif action == "pause":
                run.pause()
            else:
                run.activate()

    def set_archived(self, experiment_id: int, archived: bool) -> None:
        """Archive or unarchive a finished experiment (NotFinishedError otherwise). An
        ended experiment never changes state again, so this takes no lock."""
        exp = self.store.get_experiment(experiment_id)
        if exp.state not in TERMINAL_STATES:
            raise NotFinishedError(exp.state)
        self.store.update_experiment(experiment_id, archived=archived)

    def update_resources(self, experiment_id: int, changes: Dict[str, Any]) -> None:
        """Apply stored edits of ``resources`` (weight, priority, max_slots) to the live
        run, whose scheduling reads them."""
        if not changes:
            return
        with self.lock:
            run = self._runs.get(experiment_id)
            if run is not None:
                run.config.setdefault("resources", {}).update(changes)
            self._wake(None)

    def update_gc_policy(self, experiment_id: int, policy: Dict[str, int]) -> bool:
        """Apply a stored checkpoint GC policy to the live run: True if there is one
        (it collects by the policy when it ends); False: the caller collects now."""
        with self.lock:
            run = self._runs.get(experiment_id)
            if run is None:
                return False
            for live in (run.config.get("checkpoint_storage"), run.storage_config):
                if isinstance(live, dict):
                    live.update(policy)
            return True

    def kill_trial(self, trial_id: int) -> None:
        """End one trial now (CANCELED, never restarted); nothing if it already ended."""
        with self.lock:
            found = self._trials.get(trial_id)
            if found is not None:
                found.run.kill_trial(found.trial)

    # ------------------------------------------------------------------ trial runners

    def runner_for_token(self, token: str) -> Optional[LiveTrial]:
        """The live trial a runner's token belongs to; None for an unknown, revoked or
        ended one (a cached lookup and one dict read: cheap enough for every report)."""
        trial_id = self.store.check_trial_token(token)
        return self._trials.get(trial_id) if trial_id is not None else None

    def _answer(self, live: LiveTrial) -> Dict[str, Any]:
        """What every report's reply carries (lock held)."""
        live.run.refresh_progress()  # throttled; reports are when trained lengths change
        return {"stop": live.run.must_stop(live.trial)}

    def next_op(self, live: LiveTrial) -> Optional[Dict[str, Any]]:
        with self.lock:
            return live.run.next_op(live.trial)

    def report_training(self, live: LiveTrial,
                        reports: List[Tuple[int, Dict[str, Any]]]) -> Dict[str, Any]:
        """Training reports ``(batches, metrics)`` of one trial, stored in one commit."""
        with self.lock:
            rows = live.run.trained(live.trial, reports)
        live.run.store_training(rows)
        with self.lock:
            return self._answer(live)

    def report_validation(self, live: LiveTrial, batches: int, metrics: Dict[str, Any],
                          completes_op: bool = False, next_op: bool = False) -> Dict[str, Any]:
        """A validation report; ``completes_op``: it also ends the trial's Validate op
        (and ``next_op``: the reply carries the next op), saving the runner requests."""
        with self.lock:
            live.run.validation(live.trial, batches, metrics)
            out: Dict[str, Any] = {}
            if completes_op:
                live.run.validate_op_completed(live.trial, metrics)
                if next_op:
                    out["op"] = live.run.next_op(live.trial)
            out.update(self._answer(live))
            return out

    def report_checkpoint(self, live: LiveTrial, batches: int, uuid: str,
                          metadata: Dict[str, Any]) -> Dict[str, Any]:
        """A checkpoint written; its files are listed before the lock is taken."""
        resources = live.run.checkpoint_resources(uuid)
        with self.lock:
            live.run.checkpoint(live.trial, batches, uuid, resources, metadata)
            return self._answer(live)

    def report_validate_op_completed(self, live: LiveTrial,
                                     metrics: Dict[str, Any]) -> Dict[str, Any]:
        with self.lock:
            live.run.validate_op_completed(live.trial, metrics)
            return self._answer(live)

    def report_early_exit(self, live: LiveTrial) -> Dict[str, Any]:
        with self.lock:
            live.run.early_exit(live.trial)
            return self._answer(live)

    def best_validation(self, live: LiveTrial) -> Optional[float]:
        """The experiment's best searcher-metric value so far (None before any)."""
        with self.lock:
            return live.run.core.best_validation()

    def is_best(self, live: LiveTrial, value: float) -> bool:
        """Whether ``value`` would be the experiment's best validation metric."""
        with self.lock:
            return live.run.is_best(value)

    def report_progress(self, live: LiveTrial, units: float) -> Dict[str, Any]:
        """A script trial's progress in the searcher's length unit."""
        with self.lock:
            live.run.script_progress(live.trial, units)
            return self._answer(live)

    def report_script_exited(self, live: LiveTrial, code: int) -> Dict[str, Any]:
        """A script trial's command ended with ``code`` (its process exits next)."""
        with self.lock:
            live.run.script_exited(live.trial, code)
            return self._answer(live)

    def should_stop(self, live: LiveTrial) -> Dict[str, Any]:
        """The answer a report gets, without a report (script trials poll it)."""
        with self.lock:
            return self._answer(live)


def _restore_failure(experiment_id: int, e: Exception) -> str:
    reason = f"could not be restored at master start: {type(e).__name__}: {e}"
    logger.error("experiment %s %s", experiment_id, reason)
    return reason
