"""The model registry, config templates, slot drain flags and workload details.

Registry model names are unique; versions of a model are numbered 1, 2, ... in the
order they are registered, each naming a checkpoint by uuid. Templates are named
config mappings. All methods follow the :class:`Store` contract.
"""

import dataclasses
import datetime
from typing import Any, Dict, Iterable, List, Optional, Set

import sqlalchemy as sa

from determined.master.db import _models as m
from determined.master.db._base import StoreBase
from determined.master.db._checks import UNSET, check_dict, check_int, check_str
from determined.master.db._errors import ConflictError, NotFoundError
from determined.master.db._types import utcnow

__all__ = ["MODEL_SORT_COLUMNS", "ModelRecord", "ModelVersionRecord", "RegistryMixin",
           "WorkloadRecord"]

#: ``sort_by`` values of :meth:`RegistryMixin.list_models`.
MODEL_SORT_COLUMNS = ("name", "description", "creation_time", "last_updated_time")


@dataclasses.dataclass(frozen=True)
class ModelRecord:
    """A registry model; ``num_versions`` counts its registered versions."""

    name: str
    description: str
    metadata: Dict[str, Any]
    creation_time: datetime.datetime
    last_updated_time: datetime.datetime
    num_versions: int = 0


@dataclasses.dataclass(frozen=True)
class ModelVersionRecord:
    """Version ``version`` of model ``model_name``: checkpoint ``checkpoint_uuid``."""

    model_name: str
    version: int
    checkpoint_uuid: str
    creation_time: datetime.datetime


@dataclasses.dataclass(frozen=True)
class WorkloadRecord:
    """One stored workload with everything reported for it (``GET /trials/{id}/metrics``)."""

    kind: str
    total_batches: int
    end_time: datetime.datetime
    metrics: Dict[str, Any]
    batch_metrics: Optional[List[Dict[str, Any]]]
    num_inputs: Optional[int]


def _model_record(row: m.RegistryModel, versions: int) -> ModelRecord:
    return ModelRecord(row.name, row.description, dict(row.metadata_ or {}), row.creation_time,
                       row.last_updated_time, versions)


class RegistryMixin(StoreBase):
    # -- models ---------------------------------------------------------------------------

    def create_model(self, name: str, description: str = "",
                     metadata: Optional[Dict[str, Any]] = None) -> ModelRecord:
        """Register a new model; raises ConflictError if ``name`` is taken."""
        check_str("name", name, nonempty=True)
        check_str("description", description)
        metadata = check_dict("metadata", metadata or {})
        now = utcnow()
        with self._write() as s:
            if s.scalar(sa.select(m.RegistryModel.id).where(m.RegistryModel.name == name)):
                raise ConflictError(f"A model named {name!r} already exists")
            row = m.RegistryModel(name=name, description=description, metadata_=metadata,
                                  creation_time=now, last_updated_time=now)
            s.add(row)
            self._flush_or_conflict(s, f"A model named {name!r} already exists")
            return _model_record(row, 0)

    def _model_row(self, s: Any, name: str, lock: bool = False) -> m.RegistryModel:
        query = sa.select(m.RegistryModel).where(m.RegistryModel.name == name)
        if lock:
            query = query.with_for_update()
        row = s.scalar(query)
        if row is None:
            raise NotFoundError("model", name)
        return row

    def _count_versions(self, s: Any, model_id: int) -> int:
        return int(s.scalar(sa.select(sa.func.count()).select_from(m.ModelVersion)
                            .where(m.ModelVersion.model_id == model_id)) or 0)

    def get_model(self, name: str) -> ModelRecord:
        """The model ``name``; raises NotFoundError."""
        with self._read() as s:
            row = self._model_row(s, name)
            return _model_record(row, self._count_versions(s, row.id))

    def list_models(self, sort_by: str = "name", descending: bool = False, name: str = "",
                    description: str = "") -> List[ModelRecord]:
        """Models whose name and description contain the given texts, sorted.

        Args:
            sort_by: one of :data:`MODEL_SORT_COLUMNS`.
        """
        if sort_by not in MODEL_SORT_COLUMNS:
            raise ValueError(f"Expected sort_by to be one of {', '.join(MODEL_SORT_COLUMNS)}. "
                             f"Received: sort_by={sort_by!r}")
        check_str("name", name)
        check_str("description", description)
        column = getattr(m.RegistryModel, sort_by)
        counts = (sa.select(m.ModelVersion.model_id, sa.func.count().label("n"))
                  .group_by(m.ModelVersion.model_id).subquery())
        query = (sa.select(m.RegistryModel, counts.c.n)
                 .outerjoin(counts, counts.c.model_id == m.RegistryModel.id)
                 .order_by(column.desc() if descending else column.asc(), m.RegistryModel.id))
        with self._read() as s:
            rows = [_model_record(row, int(n or 0)) for row, n in s.execute(query)]
        return [r for r in rows if name.lower() in r.name.lower()
                and description.lower() in r.description.lower()]

    def update_model(self, name: str, *, description: Any = UNSET,
                     metadata: Any = UNSET) -> ModelRecord:
        """Replace the description and/or the whole metadata of a model."""
        if description is not UNSET:
            check_str("description", description)
        if metadata is not UNSET:
            metadata = check_dict("metadata", metadata)
        with self._write() as s:
            row = self._model_row(s, name, lock=True)
            if description is not UNSET:
                row.description = description
            if metadata is not UNSET:
                row.metadata_ = metadata
            row.last_updated_time = utcnow()
            return _model_record(row, self._count_versions(s, row.id))

    def delete_model(self, name: str) -> None:
        """Delete a model and its versions (checkpoints are not touched)."""
        with self._write() as s:
            s.delete(self._model_row(s, name, lock=True))

    # -- versions ---------------------------------------------------------------------------

    def register_model_version(self, name: str, checkpoint_uuid: str) -> ModelVersionRecord:
        """Add the next version of model ``name`` for a COMPLETED checkpoint.

        Raises:
            NotFoundError: no such model or checkpoint.
            ValueError: the checkpoint is not COMPLETED (being written, failed or deleted).
        """
        check_str("checkpoint_uuid", checkpoint_uuid, nonempty=True)
        now = utcnow()
        with self._write() as s:
            row = self._model_row(s, name, lock=True)
            state = s.scalar(sa.select(m.Checkpoint.state)
                             .where(m.Checkpoint.uuid == checkpoint_uuid))
            if state is None:
                raise NotFoundError("checkpoint", checkpoint_uuid)
            if state != "COMPLETED":
                raise ValueError(f"Expected a COMPLETED checkpoint. Received: checkpoint "
                                 f"{checkpoint_uuid} is {state}")
            latest = s.scalar(sa.select(sa.func.max(m.ModelVersion.version))
                              .where(m.ModelVersion.model_id == row.id)) or 0
            version = m.ModelVersion(model_id=row.id, version=latest + 1,
                                     checkpoint_uuid=checkpoint_uuid, creation_time=now)
            s.add(version)
            row.last_updated_time = now
            self._flush_or_conflict(s, f"Model {name!r} got a version concurrently; retry")
            return ModelVersionRecord(name, version.version, checkpoint_uuid, now)

    def list_model_versions(self, name: str, descending: bool = True) -> List[ModelVersionRecord]:
        """Versions of a model, newest first unless ``descending=False``."""
        with self._read() as s:
            model = self._model_row(s, name)
            column = m.ModelVersion.version
            query = (sa.select(m.ModelVersion).where(m.ModelVersion.model_id == model.id)
                     .order_by(column.desc() if descending else column.asc()))
            return [ModelVersionRecord(name, v.version, v.checkpoint_uuid, v.creation_time)
                    for v in s.scalars(query)]

    def get_model_version(self, name: str, version: int = 0) -> ModelVersionRecord:
        """Version ``version`` of a model; 0 means the latest. Raises NotFoundError."""
        check_int("version", version, minimum=0)
        versions = self.list_model_versions(name)
        if version == 0 and versions:
            return versions[0]
        for v in versions:
            if v.version == version:
                return v
        numbers = sorted(v.version for v in versions)
        have = ("its versions: " + ", ".join(map(str, numbers[:10]))
                + (", …" if len(numbers) > 10 else "")) if numbers else "it has none yet"
        raise NotFoundError("model version", version or "latest",
                            f"model {name!r} has no version {version} ({have})" if version
                            else f"model {name!r} has no versions yet")

    def registered_checkpoints(self, uuids: Optional[Iterable[str]] = None) -> Set[str]:
        """Checkpoint uuids some model version names (among ``uuids`` if given)."""
        query = sa.select(m.ModelVersion.checkpoint_uuid).distinct()
        if uuids is not None:
            query = query.where(m.ModelVersion.checkpoint_uuid.in_(list(uuids)))
        with self._read() as s:
            return set(s.scalars(query))

    def protected_checkpoints(self, uuids: Iterable[str]) -> Set[str]:
        """Those of ``uuids`` garbage collection keeps whatever its policy: a model
        version names them, or a trial started from them."""
        wanted = list(uuids)
        query = sa.select(m.Trial.warm_start_checkpoint).distinct().where(
            m.Trial.warm_start_checkpoint.in_(wanted))
        with self._read() as s:
            warm = set(s.scalars(query))
        return warm | self.registered_checkpoints(wanted)

    # -- templates --------------------------------------------------------------------------

    def set_template(self, name: str, config: Dict[str, Any],
                     owner: Optional[str] = None) -> None:
        """Create the template ``name`` owned by ``owner``, or replace its config (the
        owner stays)."""
        check_str("name", name, nonempty=True)
        config = check_dict("config", config)
        t = m.Template.__table__
        stmt = self._insert(t).values(name=name, config=config, owner=owner)
        stmt = stmt.on_conflict_do_update(index_elements=[t.c.name],
                                          set_={"config": stmt.excluded.config})
        with self._write() as s:
            s.execute(stmt)

    def get_template(self, name: str) -> Dict[str, Any]:
        """The template's config; raises NotFoundError."""
        return self.get_template_record(name)["config"]

    def get_template_record(self, name: str) -> Dict[str, Any]:
        """``{"name", "config", "owner"}`` of template ``name``; raises NotFoundError."""
        with self._read() as s:
            row = s.get(m.Template, name)
            if row is None:
                raise NotFoundError("template", name)
            return _template(row)

    def list_templates(self) -> Dict[str, Dict[str, Any]]:
        """Every template's config, by name."""
        return {t["name"]: t["config"] for t in self.list_template_records()}

    def list_template_records(self) -> List[Dict[str, Any]]:
        """Every template as ``{"name", "config", "owner"}``, by name."""
        with self._read() as s:
            return [_template(row) for row in
                    s.scalars(sa.select(m.Template).order_by(m.Template.name))]

    def delete_template(self, name: str) -> None:
        """Delete a template; raises NotFoundError."""
        with self._write() as s:
            row = s.get(m.Template, name)
            if row is None:
                raise NotFoundError("template", name)
            s.delete(row)

    # -- slots ------------------------------------------------------------------------------

    def set_slot_enabled(self, agent_id: str, slot_id: int, enabled: bool) -> List[int]:
        """Take a slot out of scheduling or back in; returns the agent's disabled slots."""
        check_int("slot_id", slot_id, minimum=0)
        with self._write() as s:
            row = self._get(s, m.Agent, agent_id, "agent", lock=True)
            if slot_id >= row.slots:
                raise NotFoundError("slot", slot_id, f"agent {agent_id!r} has no slot {slot_id} "
                                                     f"(its slots: 0-{row.slots - 1})")
            disabled = set(row.disabled_slots or [])
            (disabled.discard if enabled else disabled.add)(slot_id)
            row.disabled_slots = sorted(disabled)
            return list(row.disabled_slots)

    def scheduling_flags(self) -> Dict[str, Any]:
        """``{agent_id: (enabled, disabled slot indices)}`` of every registered agent."""
        t = m.Agent.__table__
        with self._read() as s:
            return {row.id: (bool(row.enabled), frozenset(row.disabled_slots or []))
                    for row in s.execute(sa.select(t.c.id, t.c.enabled, t.c.disabled_slots))}

    # -- workloads --------------------------------------------------------------------------

    def list_workloads(self, trial_id: int) -> List[WorkloadRecord]:
        """The trial's workloads (training before validation at equal batches), with
        per-batch metrics and ``num_inputs``."""
        query = (sa.select(m.Metrics).where(m.Metrics.trial_id == trial_id)
                 .order_by(m.Metrics.total_batches, m.Metrics.kind))
        with self._read() as s:
            return [WorkloadRecord(r.kind, r.total_batches, r.end_time, r.metrics,
                                   r.batch_metrics, r.num_inputs) for r in s.scalars(query)]


def _template(row: m.Template) -> Dict[str, Any]:
    return {"name": row.name, "config": dict(row.config), "owner": row.owner}
