"""Checkpoint records (SPEC 5.1) with the validation metrics taken at the same batch."""

import datetime
from typing import Any, Dict, Iterable, List, Optional

import sqlalchemy as sa
from sqlalchemy import orm

import determined
from determined.master.db import _models as m
from determined.master.db import _states
from determined.master.db._base import StoreBase
from determined.master.db._checks import check_dict, check_int, check_str, check_time
from determined.master.db._errors import ConflictError, NotFoundError
from determined.master.db._records import VALIDATION, Checkpoint
from determined.master.db._types import utcnow

__all__ = ["CheckpointsMixin"]

_VAL = orm.aliased(m.Metrics, name="val")


def _query() -> sa.Select:
    """Checkpoint rows with their experiment id and same-batch validation metrics."""
    return (
        sa.select(m.Checkpoint, m.Trial.experiment_id, _VAL.metrics)
        .join(m.Trial, m.Trial.id == m.Checkpoint.trial_id)
        .outerjoin(
            _VAL,
            sa.and_(
                _VAL.trial_id == m.Checkpoint.trial_id,
                _VAL.total_batches == m.Checkpoint.total_batches,
                _VAL.kind == VALIDATION,
            ),
        )
    )


def _record(
    row: m.Checkpoint, experiment_id: int, validation: Optional[Dict[str, Any]]
) -> Checkpoint:
    return Checkpoint(
        uuid=row.uuid,
        trial_id=row.trial_id,
        experiment_id=experiment_id,
        total_batches=row.total_batches,
        state=row.state,
        resources=row.resources,
        metadata=row.metadata_,
        framework=row.framework,
        format=row.format,
        determined_version=row.determined_version,
        start_time=row.start_time,
        end_time=row.end_time,
        validation=validation,
        id=row.id,
    )


def _check_states(states: Optional[Iterable[str]]) -> Optional[List[str]]:
    if states is None:
        return None
    if isinstance(states, str):
        states = [states]
    return [_states.check_state("checkpoint", state) for state in states]


class CheckpointsMixin(StoreBase):
    def add_checkpoint(
        self,
        uuid: str,
        trial_id: int,
        total_batches: int,
        resources: Dict[str, int],
        metadata: Dict[str, Any],
        framework: str,
        format: str,
        state: str = "COMPLETED",
        *,
        determined_version: str = determined.__version__,
        start_time: Optional[datetime.datetime] = None,
        end_time: Optional[datetime.datetime] = None,
    ) -> Checkpoint:
        """Record a checkpoint the trial wrote.

        Args:
            resources: relative path -> size in bytes.
            metadata: user metadata (top-level keys, see :meth:`add_checkpoint_metadata`).
            state: ``COMPLETED`` (default), ``ACTIVE`` (being written) or ``ERROR``.
            end_time: defaults to now unless ``state`` is ACTIVE.

        Raises:
            NotFoundError: no such trial.
            ConflictError: ``uuid`` is already recorded.
        """
        check_str("uuid", uuid, nonempty=True)
        check_int("total_batches", total_batches, minimum=0)
        resources = check_dict("resources", resources)
        metadata = check_dict("metadata", metadata)
        check_str("framework", framework)
        check_str("format", format)
        check_str("determined_version", determined_version)
        _states.check_state("checkpoint", state)
        if state == "DELETED":
            raise ValueError(
                "Expected state to be ACTIVE, COMPLETED or ERROR. Received: state='DELETED'"
            )
        now = utcnow()
        with self._write() as s:
            trial = self._get(s, m.Trial, trial_id, "trial")
            if s.scalar(sa.select(m.Checkpoint.id).where(m.Checkpoint.uuid == uuid)) is not None:
                raise ConflictError(f"Checkpoint {uuid!r} is already recorded")
            row = m.Checkpoint(
                uuid=uuid,
                trial_id=trial_id,
                total_batches=total_batches,
                state=state,
                resources=resources,
                metadata_=metadata,
                framework=framework,
                format=format,
                determined_version=determined_version,
                start_time=check_time("start_time", start_time) or now,
                end_time=check_time("end_time", end_time) or (None if state == "ACTIVE" else now),
            )
            s.add(row)
            self._flush_or_conflict(s, f"Checkpoint {uuid!r} is already recorded")
            validation = s.scalar(
                sa.select(m.Metrics.metrics).where(
                    m.Metrics.trial_id == trial_id,
                    m.Metrics.total_batches == total_batches,
                    m.Metrics.kind == VALIDATION,
                )
            )
            return _record(row, trial.experiment_id, validation)

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        """The checkpoint ``uuid`` with ``validation`` filled in; raises NotFoundError."""
        with self._read() as s:
            found = s.execute(_query().where(m.Checkpoint.uuid == uuid)).first()
            if found is None:
                raise NotFoundError("checkpoint", uuid)
            return _record(*found)

    def list_checkpoints(
        self,
        experiment_id: Optional[int] = None,
        trial_id: Optional[int] = None,
        states: Optional[Iterable[str]] = None,
    ) -> List[Checkpoint]:
        """Checkpoints in creation order, filtered by experiment, trial and states.

        ``states=None`` means every state; e.g. ``states=["COMPLETED"]`` for GC.
        """
        wanted = _check_states(states)
        query = _query().order_by(m.Checkpoint.id)
        if experiment_id is not None:
            query = query.where(m.Trial.experiment_id == experiment_id)
        if trial_id is not None:
            query = query.where(m.Checkpoint.trial_id == trial_id)
        if wanted is not None:
            query = query.where(m.Checkpoint.state.in_(wanted))
        with self._read() as s:
            return [_record(*found) for found in s.execute(query)]

    def latest_checkpoint(self, trial_id: int) -> Optional[Checkpoint]:
        """The trial's COMPLETED checkpoint with the most batches (newest on ties), or None."""
        query = (
            _query()
            .where(m.Checkpoint.trial_id == trial_id, m.Checkpoint.state == "COMPLETED")
            .order_by(m.Checkpoint.total_batches.desc(), m.Checkpoint.id.desc())
            .limit(1)
        )
        with self._read() as s:
            found = s.execute(query).first()
            return None if found is None else _record(*found)

    def set_checkpoint_state(self, uuid: str, state: str) -> Checkpoint:
        """``ACTIVE -> COMPLETED | ERROR`` or ``COMPLETED -> DELETED`` (after GC deleted
        the files). Finishing an ACTIVE checkpoint sets its ``end_time``.

        Raises:
            IllegalTransitionError: e.g. ``DELETED -> COMPLETED``.
        """
        _states.check_state("checkpoint", state)
        with self._write() as s:
            row = self._locked_checkpoint(s, uuid)
            if _states.check_transition("checkpoint", uuid, row.state, state):
                if row.state == "ACTIVE" and row.end_time is None:
                    row.end_time = utcnow()
                row.state = state
        return self.get_checkpoint(uuid)

    def add_checkpoint_metadata(self, uuid: str, metadata: Dict[str, Any]) -> Dict[str, Any]:
        """Merge ``metadata`` into the checkpoint's (top-level keys replaced); returns it."""
        metadata = check_dict("metadata", metadata)
        return self._edit_metadata(uuid, lambda old: {**old, **metadata})

    def remove_checkpoint_metadata(self, uuid: str, keys: Iterable[str]) -> Dict[str, Any]:
        """Drop top-level ``keys`` (absent ones ignored) from the metadata; returns it."""
        if isinstance(keys, str):
            keys = [keys]
        drop = {check_str("keys[]", k) for k in keys}
        return self._edit_metadata(
            uuid, lambda old: {k: v for k, v in old.items() if k not in drop}
        )

    @staticmethod
    def _locked_checkpoint(s: orm.Session, uuid: str) -> m.Checkpoint:
        query = sa.select(m.Checkpoint).where(m.Checkpoint.uuid == uuid).with_for_update()
        row = s.scalar(query)
        if row is None:
            raise NotFoundError("checkpoint", uuid)
        return row

    def _edit_metadata(self, uuid: str, edit: Any) -> Dict[str, Any]:
        with self._write() as s:
            row = self._locked_checkpoint(s, uuid)
            row.metadata_ = edit(dict(row.metadata_ or {}))
            return dict(row.metadata_)
