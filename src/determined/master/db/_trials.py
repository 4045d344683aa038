"""Trials, and rolling a trial back to a checkpoint."""

from typing import Any, Dict, List, Optional

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db import _states
from determined.master.db._base import StoreBase
from determined.master.db._checks import (
    UNSET,
    check_dict,
    check_int,
    check_number,
    check_str,
    check_time,
)
from determined.master.db._errors import ConflictError
from determined.master.db._records import Trial
from determined.master.db._types import utcnow

__all__ = ["TrialsMixin"]


def _trial_records(s: Any, rows: List[m.Trial]) -> List[Trial]:
    """Records of ``rows``, with the integer ids of their warm-start checkpoints (one
    query)."""
    uuids = {r.warm_start_checkpoint for r in rows if r.warm_start_checkpoint}
    ids: Dict[str, int] = {}
    if uuids:
        query = sa.select(m.Checkpoint.uuid, m.Checkpoint.id).where(m.Checkpoint.uuid.in_(uuids))
        ids = {u: i for u, i in s.execute(query)}
    return [_trial_record(r, ids.get(r.warm_start_checkpoint or "")) for r in rows]


def _trial_record(row: m.Trial, warm_start_checkpoint_id: Optional[int]) -> Trial:
    return Trial(
        id=row.id,
        experiment_id=row.experiment_id,
        request_id=row.request_id,
        state=row.state,
        hparams=row.hparams,
        seed=row.seed,
        warm_start_checkpoint=row.warm_start_checkpoint,
        restarts=row.restarts,
        total_batches=row.total_batches,
        start_time=row.start_time,
        end_time=row.end_time,
        latest_checkpoint=row.latest_checkpoint,
        best_validation=row.best_validation,
        warm_start_checkpoint_id=warm_start_checkpoint_id,
        error=row.error,
    )


class TrialsMixin(StoreBase):
    def create_trial(
        self,
        experiment_id: int,
        request_id: str,
        hparams: Dict[str, Any],
        seed: int,
        warm_start_checkpoint: Optional[str] = None,
    ) -> int:
        """Store a new ACTIVE trial; returns its id, unique across the cluster.

        Args:
            request_id: the searcher's request id (unique within the experiment).
            seed: the trial seed in [0, 2**31).
            warm_start_checkpoint: UUID of the checkpoint it starts from (kept by GC).

        Raises:
            NotFoundError: no such experiment.
            ConflictError: the experiment already has a trial for ``request_id``.
        """
        check_str("request_id", request_id, nonempty=True)
        hparams = check_dict("hparams", hparams)
        check_int("seed", seed, minimum=0)
        check_str("warm_start_checkpoint", warm_start_checkpoint, optional=True)
        with self._write() as s:
            self._get(s, m.Experiment, experiment_id, "experiment")
            exists = s.scalar(
                sa.select(m.Trial.id).where(
                    m.Trial.experiment_id == experiment_id, m.Trial.request_id == request_id
                )
            )
            if exists is not None:
                raise ConflictError(
                    f"Experiment {experiment_id} already has trial {exists} for "
                    f"request_id {request_id!r}"
                )
            row = m.Trial(
                experiment_id=experiment_id,
                request_id=request_id,
                state="ACTIVE",
                hparams=hparams,
                seed=seed,
                warm_start_checkpoint=warm_start_checkpoint,
                restarts=0,
                total_batches=0,
                start_time=utcnow(),
            )
            s.add(row)
            self._flush_or_conflict(
                s, f"Experiment {experiment_id} already has a trial for request_id {request_id!r}"
            )
            return row.id

    def get_trial(self, id: int) -> Trial:
        """The trial ``id``; raises NotFoundError."""
        with self._read() as s:
            return _trial_records(s, [self._get(s, m.Trial, id, "trial")])[0]

    def list_trials(self, experiment_id: int) -> List[Trial]:
        """The experiment's trials by ascending id (empty for an unknown experiment)."""
        query = (
            sa.select(m.Trial).where(m.Trial.experiment_id == experiment_id).order_by(m.Trial.id)
        )
        with self._read() as s:
            return _trial_records(s, list(s.scalars(query)))

    def trial_by_request(self, experiment_id: int, request_id: str) -> Optional[Trial]:
        """The experiment's trial for a searcher request id, or None."""
        query = sa.select(m.Trial).where(
            m.Trial.experiment_id == experiment_id, m.Trial.request_id == request_id
        )
        with self._read() as s:
            row = s.scalar(query)
            return None if row is None else _trial_records(s, [row])[0]

    def update_trial(
        self,
        id: int,
        *,
        state: Any = UNSET,
        restarts: Any = UNSET,
        total_batches: Any = UNSET,
        end_time: Any = UNSET,
        latest_checkpoint: Any = UNSET,
        best_validation: Any = UNSET,
        warm_start_checkpoint: Any = UNSET,
        error: Any = UNSET,
    ) -> Trial:
        """Change the given fields only; returns the updated trial.

        ``state`` follows ``ACTIVE -> COMPLETED | CANCELED | ERROR``; entering a terminal
        state sets ``end_time`` to now unless given.

        Raises:
            IllegalTransitionError: e.g. ``COMPLETED -> ACTIVE``.
            NotFoundError: no such trial.
        """
        changes: Dict[str, Any] = {}
        if state is not UNSET:
            _states.check_state("trial", state)
        if restarts is not UNSET:
            changes["restarts"] = check_int("restarts", restarts, minimum=0)
        if total_batches is not UNSET:
            changes["total_batches"] = check_int("total_batches", total_batches, minimum=0)
        if end_time is not UNSET:
            changes["end_time"] = check_time("end_time", end_time)
        if latest_checkpoint is not UNSET:
            changes["latest_checkpoint"] = check_str(
                "latest_checkpoint", latest_checkpoint, optional=True
            )
        if warm_start_checkpoint is not UNSET:  # a PBT clone learns its parent's at start
            changes["warm_start_checkpoint"] = check_str(
                "warm_start_checkpoint", warm_start_checkpoint, optional=True)
        if best_validation is not UNSET:
            changes["best_validation"] = check_number(
                "best_validation", best_validation, optional=True, finite=False
            )
        if error is not UNSET:  # why its process last failed (the core bounds its size)
            changes["error"] = check_str("error", error, optional=True)
        with self._write() as s:
            row = self._get(s, m.Trial, id, "trial", lock=True)
            if state is not UNSET:
                self._move_to_state("trial", row, state, changes.get("end_time"))
            for key, value in changes.items():
                setattr(row, key, value)
            return _trial_records(s, [row])[0]

    def rollback_trial(self, trial_id: int, to_batches: int) -> List[str]:
        """Forget what the trial did after ``to_batches`` (a restart from a checkpoint).

        Deletes its metrics rows and checkpoint records with ``total_batches >
        to_batches``, sets the trial's ``total_batches`` to ``to_batches`` and, if its
        ``latest_checkpoint`` was deleted, points it at the newest remaining
        COMPLETED checkpoint (or None).

        Returns:
            UUIDs of deleted COMPLETED checkpoints: their files are now orphaned and
            the caller should delete them.
        """
        check_int("to_batches", to_batches, minimum=0)
        with self._write() as s:
            trial = self._get(s, m.Trial, trial_id, "trial", lock=True)
            s.execute(
                sa.delete(m.Metrics).where(
                    m.Metrics.trial_id == trial_id, m.Metrics.total_batches > to_batches
                )
            )
            later = sa.and_(
                m.Checkpoint.trial_id == trial_id, m.Checkpoint.total_batches > to_batches
            )
            orphaned = list(
                s.scalars(
                    sa.select(m.Checkpoint.uuid)
                    .where(later, m.Checkpoint.state == "COMPLETED")
                    .order_by(m.Checkpoint.id)
                )
            )
            deleted = set(s.scalars(sa.select(m.Checkpoint.uuid).where(later)))
            s.execute(sa.delete(m.Checkpoint).where(later))
            trial.total_batches = to_batches
            if trial.latest_checkpoint in deleted:
                trial.latest_checkpoint = s.scalar(
                    sa.select(m.Checkpoint.uuid)
                    .where(m.Checkpoint.trial_id == trial_id, m.Checkpoint.state == "COMPLETED")
                    .order_by(m.Checkpoint.total_batches.desc(), m.Checkpoint.id.desc())
                    .limit(1)
                )
            return orphaned
