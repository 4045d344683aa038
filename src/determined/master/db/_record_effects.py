"""The record side of the experiment lifecycle, shared by the local driver and the
master: :class:`RecordEffects` carries out every effect of an
:class:`~determined.engine.ExperimentCore` that writes records (one method per
effect), and :func:`resolve_source_checkpoint` finds the checkpoint a search
warm-starts from. Process effects (launch, stop, kill, wake, finish) go back to the
adapter."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from determined import engine
from determined.master.db._errors import ConflictError, NotFoundError
from determined.master.db._snapshot_json import SnapshotJSON
from determined.master.db._store import Store

__all__ = ["RecordEffects", "SourceCheckpointError", "checkpoint_resources",
           "resolve_source_checkpoint", "restore_location"]

logger = logging.getLogger("determined.master")

_TERMINAL_TRIAL = {"COMPLETED", "CANCELED", "ERROR"}
#: The effects RecordEffects carries out (by handler name).
RECORD_EFFECTS = frozenset({
    "create_trial", "store_metrics", "rollback_metrics", "register_checkpoint",
    "delete_checkpoint", "update_trial", "trial_log", "set_experiment_state", "save_snapshot",
})


class RecordEffects:
    """Writes an experiment's records for the core's effects.

    Args:
        store: the database (the master's, or a local directory's ``local.db``).
        experiment_id: the experiment's id in ``store``.
        delete_files: deletes checkpoint files (called after their records are marked:
            a crash in between leaks files, never leaves a record without files).
        log: writes a lifecycle line to a trial's log (default: the store).
        buffer_training: keep training rows until :meth:`flush` (one transaction per
            batch of reports) instead of writing each at once.
        snapshot_extra: added to every saved snapshot (the local driver's own keys).
    """

    def __init__(self, store: Store, experiment_id: int,
                 delete_files: Callable[[List[str]], None],
                 log: Optional[Callable[[int, str], None]] = None,
                 buffer_training: bool = False,
                 snapshot_extra: Optional[Mapping[str, Any]] = None):
        self.store = store
        self.experiment_id = experiment_id
        self.trial_ids: Dict[int, int] = {}  # request id -> trial id
        self._delete_files = delete_files
        self._log = log or (lambda trial_id, line: store.add_logs(trial_id, [line]))
        self._buffer = buffer_training
        self._rows: Dict[int, List[Any]] = {}  # training rows not yet written, by trial id
        self._deletes: List[str] = []
        self._save = False
        self._snapshot_json = SnapshotJSON()
        self.snapshot_extra = dict(snapshot_extra or {})
        self.progress = -1.0  # as last stored
        # What an adapter may watch: a trial record made, a trial's or the experiment's
        # stored state changed.
        self.on_created: Callable[[int, int], None] = lambda request_id, trial_id: None
        self.on_trial_state: Callable[[int, str], None] = lambda trial_id, state: None
        self.on_experiment_state: Callable[[str], None] = lambda state: None

    def apply(self, effects: Sequence[engine.Effect], core: Any) -> List[engine.Effect]:
        """Carry out the record effects in order; returns the others, in order. A
        snapshot, when asked for, is saved after the records it may name."""
        rest: List[engine.Effect] = []
        for e in effects:
            if e.handler in RECORD_EFFECTS:
                engine.dispatch([e], self)
            else:
                rest.append(e)
        if self._save:
            self._save = False
            self.flush()
            snapshot = dict(core.snapshot(), **self.snapshot_extra)
            self.store.save_searcher_snapshot(self.experiment_id,
                                              self._snapshot_json.encode(snapshot), core.events)
            self.write_progress(core.progress())
        if self._deletes:
            uuids, self._deletes = self._deletes, []
            self._delete_files(uuids)
        return rest

    def flush(self) -> None:
        """Write the buffered training rows (one transaction per trial)."""
        self.write_training(self.take_training())

    def take_training(self) -> Dict[int, List[Any]]:
        """The buffered training rows by trial id, no longer buffered: for a caller that
        writes them itself (:meth:`write_training`), e.g. outside a lock."""
        rows, self._rows = self._rows, {}
        return rows

    def write_training(self, rows: Mapping[int, List[Any]]) -> None:
        for trial_id, reports in rows.items():
            self.store.add_training_metrics_many(trial_id, reports)

    def write_progress(self, progress: float) -> None:
        if progress != self.progress:
            self.progress = progress
            self.store.update_experiment(self.experiment_id, progress=progress)

    def tid(self, request_id: int) -> int:
        return self.trial_ids[request_id]

    def mark_error(self, reason: str) -> None:
        """End as ERROR an experiment that no core can carry on (its run cannot be
        built, e.g. its snapshot is unreadable): every unfinished trial logs ``reason``
        and ends ERROR, and the experiment's description names it if it had none."""
        exp = self.store.get_experiment(self.experiment_id)
        effects: List[engine.Effect] = []
        if exp.state not in ("STOPPING_ERROR", "ERROR"):
            effects.append(engine.SetExperimentState("STOPPING_ERROR"))
        if exp.state != "ERROR":
            effects.append(engine.SetExperimentState("ERROR"))
        for rec in self.store.list_trials(self.experiment_id):
            if rec.state not in _TERMINAL_TRIAL:
                rid = int(rec.request_id)
                self.trial_ids[rid] = rec.id
                effects += [engine.TrialLog(rid, f"Experiment {self.experiment_id} {reason}"),
                            engine.UpdateTrial(rid, {"state": "ERROR"})]
        self.apply(effects, core=None)
        if not exp.description:
            self.store.update_experiment(self.experiment_id,
                                         description=f"ERROR: {reason}"[:1000])

    # ------------------------------------------------------------------ one per effect

    def create_trial(self, e: engine.CreateTrial) -> None:
        try:
            trial_id = self.store.create_trial(self.experiment_id, str(e.request_id),
                                               e.hparams, e.seed,
                                               warm_start_checkpoint=e.warm_start)
        except ConflictError:  # created before a crash that came ahead of the snapshot
            found = self.store.trial_by_request(self.experiment_id, str(e.request_id))
            if found is None:
                raise
            trial_id = found.id
        self.trial_ids[e.request_id] = trial_id
        self.on_created(e.request_id, trial_id)

    def store_metrics(self, e: engine.StoreMetrics) -> None:
        tid, report = self.tid(e.request_id), e.metrics
        if e.kind == "training":
            row = (e.batches, report.get("avg_metrics") or {}, report.get("batch_metrics"),
                   report.get("num_inputs"))
            self._rows.setdefault(tid, []).append(row)
            if not self._buffer:
                self.flush()
            return
        self.flush()
        self.store.add_validation_metrics(tid, e.batches, report.get("validation_metrics") or {},
                                          num_inputs=report.get("num_inputs"))

    def rollback_metrics(self, e: engine.RollbackMetrics) -> None:
        self.flush()
        self._deletes.extend(self.store.rollback_trial(self.tid(e.request_id), e.batches))

    def register_checkpoint(self, e: engine.RegisterCheckpoint) -> None:
        self.flush()
        self.store.add_checkpoint(e.uuid, self.tid(e.request_id), e.batches,
                                  dict(e.resources), {}, e.framework, e.format)

    def delete_checkpoint(self, e: engine.DeleteCheckpoint) -> None:
        # The core knows its own trials' warm starts, not the records outside it.
        if self.store.protected_checkpoints([e.uuid]):
            logger.info("experiment %s: checkpoint %s is kept: a model version or another "
                        "trial uses it", self.experiment_id, e.uuid)
            return
        try:
            self.store.set_checkpoint_state(e.uuid, "DELETED")
        except NotFoundError:
            pass  # its record went with a rollback
        self._deletes.append(e.uuid)

    def update_trial(self, e: engine.UpdateTrial) -> None:
        fields = dict(e.fields)
        if not fields:
            return
        tid = self.tid(e.request_id)
        self.store.update_trial(tid, **fields)
        if "state" in fields:
            self.on_trial_state(tid, fields["state"])
        if fields.get("state") in _TERMINAL_TRIAL:
            self.store.revoke_trial_tokens(tid)

    def trial_log(self, e: engine.TrialLog) -> None:
        self._log(self.tid(e.request_id), f"[determined] {e.line}")

    def set_experiment_state(self, e: engine.SetExperimentState) -> None:
        self.store.set_experiment_state(self.experiment_id, e.state)
        self.on_experiment_state(e.state)

    def save_snapshot(self, e: engine.SaveSnapshot) -> None:
        self._save = True


class SourceCheckpointError(ValueError):
    """The checkpoint a config names to warm-start from cannot be used (``field`` names
    the config field)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def resolve_source_checkpoint(config: Mapping[str, Any], store: Store,
                              build_storage: Callable[[Dict[str, Any]], Any]
                              ) -> Optional[Tuple[str, str]]:
    """(uuid, path) of the checkpoint ``searcher.source_checkpoint_uuid`` or
    ``searcher.source_trial_id`` names, located with the storage of the experiment
    that wrote it; None if the config names none.

    Raises:
        SourceCheckpointError: naming the field, if the checkpoint or trial is unknown
            or the checkpoint is not COMPLETED.
    """
    s = config.get("searcher") or {}
    uuid, field = s.get("source_checkpoint_uuid"), "searcher.source_checkpoint_uuid"
    if not uuid and s.get("source_trial_id") is not None:
        field = "searcher.source_trial_id"
        trial_id = s["source_trial_id"]
        try:
            c = store.latest_checkpoint(int(trial_id))
        except (NotFoundError, TypeError, ValueError):
            c = None
        if c is None:
            raise SourceCheckpointError(field, f"trial {trial_id} has no checkpoint")
        uuid = c.uuid
    if not uuid:
        return None
    try:
        c = store.get_checkpoint(str(uuid))
    except NotFoundError:
        raise SourceCheckpointError(field, f"no checkpoint {uuid}") from None
    if c.state != "COMPLETED":
        raise SourceCheckpointError(field, f"checkpoint {uuid} is {c.state}, expected "
                                           "COMPLETED")
    source_config = store.get_experiment(c.experiment_id).config
    storage = build_storage(dict(source_config.get("checkpoint_storage") or {}))
    return c.uuid, storage.describe(c.uuid)


def checkpoint_resources(storage: Any, uuid: str) -> Dict[str, int]:
    """A reported checkpoint's file sizes (also in object stores); {} when they cannot
    be listed. Raises ``EngineError`` for an id that is not a checkpoint id."""
    engine.check_checkpoint_id(uuid)
    try:
        return storage.resources(uuid)
    except Exception as e:  # noqa: BLE001 - the checkpoint counts; sizes are a bonus
        logger.warning("checkpoint %s: could not list its files: %s", uuid, e)
        return {}


def restore_location(core: Any, request_id: int, storage: Any,
                     source_path: Optional[str]) -> Tuple[Optional[str], bool]:
    """(checkpoint path or None, whether it is a warm start) for a trial about to
    start: the search's source checkpoint lies in its own experiment's storage
    (``source_path``), every other one in this experiment's ``storage``."""
    uuid, warm = core.restore_point(request_id)
    if uuid is None:
        return None, False
    if warm and uuid == core.source_checkpoint and source_path:
        return source_path, warm
    return storage.describe(uuid), warm
