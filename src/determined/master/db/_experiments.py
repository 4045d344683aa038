"""Experiments, their searcher snapshots and model definitions."""

import datetime
from typing import Any, Dict, List, Optional, Tuple

import sqlalchemy as sa
from sqlalchemy import orm

from determined.config import check_labels
from determined.master.db import _models as m
from determined.master.db import _states
from determined.master.db._base import StoreBase
from determined.master.db._checks import (
    UNSET,
    check_bool,
    check_dict,
    check_int,
    check_number,
    check_str,
    check_str_list,
    check_time,
)
from determined.master.db._errors import NotFoundError
from determined.master.db._records import Experiment, SearcherSnapshot
from determined.master.db._types import RawJSON, utcnow

__all__ = ["CREATE_KEY_RETENTION", "ExperimentsMixin", "GIT_FIELDS"]

#: How long a deleted experiment's idempotency key is kept (a late retry of its create
#: is refused, not answered with a new experiment).
CREATE_KEY_RETENTION = datetime.timedelta(hours=24)

#: What ``det e create --git`` records about the model definition's repository.
GIT_FIELDS = ("git_remote", "git_commit", "git_committer", "git_commit_date")


def _experiment_record(row: m.Experiment) -> Experiment:
    return Experiment(
        id=row.id,
        state=row.state,
        config=row.config,
        owner=row.owner.username,
        parent_id=row.parent_id,
        description=row.description,
        labels=list(row.labels or []),
        archived=row.archived,
        weight=row.weight,
        priority=row.priority,
        max_slots=row.max_slots,
        progress=row.progress,
        start_time=row.start_time,
        end_time=row.end_time,
        git=({name: getattr(row, name) for name in GIT_FIELDS}
             if row.git_commit is not None else None),
    )


def _defaults_from_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """Column values the config determines at creation (all editable later)."""
    resources = config.get("resources") if isinstance(config.get("resources"), dict) else {}
    description = config.get("description")
    labels = config.get("labels")
    weight = resources.get("weight", 1.0)
    max_slots = resources.get("max_slots")
    priority = resources.get("priority")
    return {
        "description": description if isinstance(description, str) else "",
        "labels": [str(x) for x in labels] if isinstance(labels, (list, tuple)) else [],
        "weight": float(weight) if isinstance(weight, (int, float)) else 1.0,
        "max_slots": max_slots if isinstance(max_slots, int) else None,
        "priority": priority if isinstance(priority, int) else None,
    }


class ExperimentsMixin(StoreBase):
    def create_experiment(
        self,
        config: Dict[str, Any],
        model_def: bytes,
        owner: str,
        parent_id: Optional[int] = None,
        state: str = "PAUSED",
        git: Optional[Dict[str, str]] = None,
        context_bytes: Optional[int] = None,
        original_config: Optional[Dict[str, Any]] = None,
        create_key: Optional[Tuple[str, str]] = None,
    ) -> int:
        """Store a new experiment and return its id.

        ``description``, ``labels``, ``resources.weight``, ``resources.max_slots`` and
        ``resources.priority`` are copied from ``config`` into their own columns.

        Args:
            config: the validated experiment config (JSON-able).
            model_def: the packed context directory.
            owner: an existing user name.
            parent_id: the experiment this one was forked from, if any.
            state: ``PAUSED`` (default; SPEC 1.4: stored paused, then activated) or ``ACTIVE``.
            git: where the model definition came from: every key of ``GIT_FIELDS``.
            context_bytes: the context's files' size unpacked (for the quotas).
            original_config: the config as the user submitted it, before defaults
                (:meth:`get_experiment_original_config`).
            create_key: ``(key, digest)``: the create request's idempotency key and its
                body's digest, stored in the same transaction as the experiment
                (:meth:`experiment_for_create_key`).

        Raises:
            NotFoundError: unknown owner or parent.
            ConflictError: ``owner`` already created an experiment with this key.

        Example:
            >>> exp_id = store.create_experiment({"searcher": {...}}, b"...", "determined")
        """
        config = check_dict("config", config)
        if not isinstance(model_def, (bytes, bytearray, memoryview)):
            raise ValueError(
                f"Expected model_def to be bytes. Received: model_def={type(model_def)!r}"
            )
        check_str("owner", owner, nonempty=True)
        check_int("parent_id", parent_id, optional=True)
        check_int("context_bytes", context_bytes, minimum=0, optional=True)
        if original_config is not None:
            original_config = check_dict("original_config", original_config)
        if git is not None:
            git = check_dict("git", git)
            if sorted(git) != sorted(GIT_FIELDS):
                raise ValueError(f"Expected git to have exactly the keys {list(GIT_FIELDS)}. "
                                 f"Received: {sorted(git)}")
            for name in GIT_FIELDS:
                check_str(f"git.{name}", git[name])
        if state not in ("ACTIVE", "PAUSED"):
            raise ValueError(f"Expected state to be ACTIVE or PAUSED. Received: state={state!r}")
        key, digest = create_key if create_key is not None else (None, None)
        if key is not None:
            check_str("create_key", key, nonempty=True)
            check_str("create_key digest", digest, nonempty=True)
        with self._write() as s:
            owner_id = s.scalar(sa.select(m.User.id).where(m.User.username == owner))
            if owner_id is None:
                raise NotFoundError("user", owner)
            if parent_id is not None:
                self._get(s, m.Experiment, parent_id, "experiment")
            now = utcnow()
            row = m.Experiment(
                state=state,
                config=config,
                model_def=bytes(model_def),
                owner_id=owner_id,
                parent_id=parent_id,
                archived=False,
                progress=None,
                start_time=now,
                paused_at=now if state == "PAUSED" else None,
                **_defaults_from_config(config),
                **(git or {}),
                context_bytes=context_bytes,
                original_config=original_config,
                create_key=key,
                create_digest=digest,
            )
            s.add(row)
            self._flush_or_conflict(
                s, f"user {owner!r} already created an experiment with idempotency key {key!r}")
            return row.id

    def experiment_for_create_key(self, owner: str, key: str) -> Optional[Tuple[int, str]]:
        """``(id, digest)`` of the experiment ``owner`` created with idempotency key
        ``key`` (:meth:`create_experiment`), or None."""
        query = (sa.select(m.Experiment.id, m.Experiment.create_digest)
                 .join(m.User, m.User.id == m.Experiment.owner_id)
                 .where(m.User.username == owner, m.Experiment.create_key == key))
        with self._read() as s:
            row = s.execute(query).one_or_none()
        return (row[0], row[1]) if row is not None else None

    def deleted_experiment_for_create_key(self, owner: str,
                                          key: str) -> Optional[Tuple[int, str]]:
        """``(id, digest)`` of the deleted experiment ``owner`` created with idempotency
        key ``key``, if it was deleted less than ``CREATE_KEY_RETENTION`` ago; or None."""
        since = utcnow() - CREATE_KEY_RETENTION
        query = (sa.select(m.DeletedCreateKey.experiment_id, m.DeletedCreateKey.create_digest)
                 .join(m.User, m.User.id == m.DeletedCreateKey.owner_id)
                 .where(m.User.username == owner, m.DeletedCreateKey.create_key == key,
                        m.DeletedCreateKey.deleted_at > since))
        with self._read() as s:
            row = s.execute(query).one_or_none()
        return (row[0], row[1]) if row is not None else None

    def prune_deleted_create_keys(self) -> int:
        """Forget the keys of experiments deleted ``CREATE_KEY_RETENTION`` ago or more;
        returns how many."""
        with self._write() as s:
            return self._prune_deleted_create_keys(s)

    @staticmethod
    def _prune_deleted_create_keys(s: orm.Session) -> int:
        since = utcnow() - CREATE_KEY_RETENTION
        table = m.DeletedCreateKey.__table__
        return int(s.execute(table.delete().where(table.c.deleted_at <= since)).rowcount or 0)

    def context_bytes_used(self, owner: str) -> Tuple[int, int]:
        """Unpacked bytes of the stored contexts of ``owner``'s experiments and of all
        (the packed size where none was recorded)."""
        size = sa.func.coalesce(m.Experiment.context_bytes,
                                sa.func.length(m.Experiment.model_def))
        mine = sa.func.sum(sa.case((m.User.username == owner, size), else_=0))
        query = sa.select(mine, sa.func.sum(size)).join(
            m.User, m.User.id == m.Experiment.owner_id)
        with self._read() as s:
            row = s.execute(query).one()
        return int(row[0] or 0), int(row[1] or 0)

    def get_experiment(self, id: int) -> Experiment:
        """The experiment ``id``; raises NotFoundError."""
        with self._read() as s:
            return _experiment_record(self._get(s, m.Experiment, id, "experiment"))

    def get_experiment_original_config(self, id: int) -> Optional[Dict[str, Any]]:
        """The config of experiment ``id`` as submitted, before defaults were filled in;
        None for experiments stored before it was kept (their ``config`` is all there
        is). Raises NotFoundError."""
        with self._read() as s:
            row = s.execute(sa.select(m.Experiment.id, m.Experiment.original_config)
                            .where(m.Experiment.id == id)).one_or_none()
        if row is None:
            raise NotFoundError("experiment", id)
        return row[1]

    def list_experiments(
        self, include_archived: bool = False, owner: Optional[str] = None
    ) -> List[Experiment]:
        """Experiments by ascending id; archived ones only if asked; optionally one owner's."""
        query = sa.select(m.Experiment).order_by(m.Experiment.id)
        if not include_archived:
            query = query.where(m.Experiment.archived.is_(False))
        if owner is not None:
            query = query.join(m.User, m.Experiment.owner_id == m.User.id).where(
                m.User.username == owner
            )
        with self._read() as s:
            return [_experiment_record(row) for row in s.scalars(query).unique()]

    def set_experiment_state(
        self, id: int, state: str, end_time: Optional[datetime.datetime] = None
    ) -> Experiment:
        """Move the experiment to ``state``, checking the SPEC 1.4 lifecycle.

        Entering a terminal state (COMPLETED, CANCELED, ERROR) sets ``end_time``
        (now unless given). Setting the current state again changes nothing.

        Raises:
            IllegalTransitionError: e.g. ``COMPLETED -> ACTIVE``; names both states.
            NotFoundError: no such experiment.
        """
        _states.check_state("experiment", state)
        check_time("end_time", end_time)
        if end_time is not None and state not in _states.TERMINAL_STATES:
            raise ValueError(
                f"Expected end_time only with a terminal state. Received: state={state!r}, "
                f"end_time={end_time!r}"
            )
        with self._write() as s:
            row = self._get(s, m.Experiment, id, "experiment", lock=True)
            self._move_to_state("experiment", row, state, end_time)
            if row.state != "PAUSED":
                row.paused_at = None
            elif row.paused_at is None:
                row.paused_at = utcnow()
            return _experiment_record(row)

    def update_experiment(
        self,
        id: int,
        *,
        description: Any = UNSET,
        labels: Any = UNSET,
        archived: Any = UNSET,
        weight: Any = UNSET,
        priority: Any = UNSET,
        max_slots: Any = UNSET,
        progress: Any = UNSET,
        config: Any = UNSET,
    ) -> Experiment:
        """Change the given fields only; returns the updated experiment.

        ``priority``, ``max_slots`` and ``progress`` accept None (unset). ``labels``
        replaces the whole list; ``config`` replaces the stored config (e.g. a new
        ``checkpoint_storage`` GC policy) without touching the other columns.
        """
        changes: Dict[str, Any] = {}
        if description is not UNSET:
            changes["description"] = check_str("description", description)
        if labels is not UNSET:
            changes["labels"] = check_labels(check_str_list("labels", labels))
        if archived is not UNSET:
            changes["archived"] = check_bool("archived", archived)
        if weight is not UNSET:
            changes["weight"] = check_number("weight", weight, minimum=0.0)
        if priority is not UNSET:
            changes["priority"] = check_int("priority", priority, optional=True)
        if max_slots is not UNSET:
            changes["max_slots"] = check_int("max_slots", max_slots, minimum=0, optional=True)
        if progress is not UNSET:
            changes["progress"] = check_number(
                "progress", progress, minimum=0.0, maximum=1.0, optional=True
            )
        if config is not UNSET:
            changes["config"] = check_dict("config", config)
        with self._write() as s:
            row = self._get(s, m.Experiment, id, "experiment", lock=True)
            for key, value in changes.items():
                setattr(row, key, value)
            return _experiment_record(row)

    def delete_experiment(self, id: int) -> None:
        """Delete the experiment with its trials, metrics, checkpoint records and logs.

        Checkpoint files are not touched: delete them first. Its idempotency key, if it
        was created with one, is kept for ``CREATE_KEY_RETENTION``
        (:meth:`deleted_experiment_for_create_key`); older ones are pruned.
        """
        getattr(self, "_trial_tokens", {}).clear()  # its trials' tokens go with it
        with self._write() as s:
            row = self._get(s, m.Experiment, id, "experiment")
            if row.create_key is not None:
                self._prune_deleted_create_keys(s)
                table = m.DeletedCreateKey.__table__
                s.execute(table.delete().where(table.c.owner_id == row.owner_id,
                                               table.c.create_key == row.create_key))
                s.add(m.DeletedCreateKey(owner_id=row.owner_id, create_key=row.create_key,
                                         create_digest=row.create_digest or "",
                                         experiment_id=row.id, deleted_at=utcnow()))
            s.delete(row)

    def get_model_def(self, id: int) -> bytes:
        """The packed context directory given to :meth:`create_experiment`."""
        with self._read() as s:
            data = s.scalar(sa.select(m.Experiment.model_def).where(m.Experiment.id == id))
            if data is None:
                raise NotFoundError("experiment", id)
            return bytes(data)

    def save_searcher_snapshot(
        self, id: int, snapshot: Dict[str, Any], events_applied: int
    ) -> None:
        """Replace the experiment's searcher snapshot (JSON-able; NaN/inf allowed).

        ``events_applied`` counts the searcher events folded into the snapshot, so a
        restarted master replays only later ones. ``snapshot`` may come encoded, as a
        :class:`RawJSON` object.
        """
        if not isinstance(snapshot, RawJSON) or not snapshot.startswith("{"):
            snapshot = check_dict("snapshot", snapshot)
        check_int("events_applied", events_applied, minimum=0)
        table = m.SearcherSnapshot.__table__
        now = utcnow()
        with self._write() as s:
            self._get(s, m.Experiment, id, "experiment")
            stmt = self._insert(table).values(
                experiment_id=id, snapshot=snapshot, events_applied=events_applied, updated_at=now
            )
            stmt = stmt.on_conflict_do_update(
                index_elements=[table.c.experiment_id],
                set_={
                    "snapshot": stmt.excluded.snapshot,
                    "events_applied": stmt.excluded.events_applied,
                    "updated_at": stmt.excluded.updated_at,
                },
            )
            s.execute(stmt)

    def get_searcher_snapshot(self, id: int) -> Optional[SearcherSnapshot]:
        """The last saved snapshot, or None if none was saved."""
        with self._read() as s:
            row = s.get(m.SearcherSnapshot, id)
            if row is None:
                return None
            return SearcherSnapshot(
                experiment_id=row.experiment_id,
                snapshot=row.snapshot,
                events_applied=row.events_applied,
                updated_at=row.updated_at,
            )
