"""The model registry on the REST API (issue 9 part 6; upstream 0.13's ``/models``).

- ``GET /models?sort_by=name|description|creation_time|last_updated_time&
  order_by=asc|desc&name=&description=`` -> ``{"models": [model]}`` (``name`` and
  ``description`` filter by substring).
- ``POST /models/{name}`` ``{description, metadata}`` -> model (409 if taken).
- ``GET /models/{name}``; ``PATCH /models/{name}`` ``{description?, metadata?}``
  (``metadata`` replaces the whole mapping); ``DELETE /models/{name}`` (admins).
- ``GET /models/{name}/versions?order_by=desc|asc`` -> ``{"model": model, "versions":
  [version]}``.
- ``POST /models/{name}/versions`` ``{checkpoint_uuid}`` -> version (the next number).
- ``GET /models/{name}/versions/{version}`` (0: the latest).

A model is ``{name, description, metadata, creation_time, last_updated_time,
num_versions}``; a version ``{model, version, creation_time, checkpoint, searcher_metric}``
with the checkpoint as ``GET /checkpoints/{uuid}`` shows it and ``searcher_metric``
``{name, smaller_is_better, value}``: the metric of the experiment that wrote the
checkpoint, and its value at the checkpoint (null without a validation there).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import fastapi
import pydantic
from fastapi import Depends, Query

from determined.engine import check_checkpoint_id
from determined.master._core import Master
from determined.master.api._auth import require_admin
from determined.master.api._errors import fail
from determined.master.api._ui_queries import searcher_metric
from determined.master.db import ConflictError, Store, User
from determined.master.views import iso

__all__ = ["model_json", "model_versions_json", "registry_router"]


class _Body(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class NewModel(_Body):
    description: str = ""
    metadata: Dict[str, Any] = {}


class PatchModel(_Body):
    description: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None


class NewVersion(_Body):
    checkpoint_uuid: str = pydantic.Field(min_length=1)

    @pydantic.field_validator("checkpoint_uuid")
    @classmethod
    def _well_formed(cls, uuid: str) -> str:
        """A malformed id is a bad request (400), an unknown one a 404."""
        return check_checkpoint_id(uuid)


def model_json(r: Any) -> Dict[str, Any]:
    return {"name": r.name, "description": r.description, "metadata": r.metadata,
            "creation_time": iso(r.creation_time),
            "last_updated_time": iso(r.last_updated_time), "num_versions": r.num_versions}


def _searcher_metric_json(store: Store, checkpoint: Any) -> Dict[str, Any]:
    name, smaller = searcher_metric(store.get_experiment(checkpoint.experiment_id).config)
    value = (checkpoint.validation or {}).get(name)
    usable = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {"name": name, "smaller_is_better": smaller, "value": value if usable else None}


def model_version_json(store: Store, v: Any,
                       checkpoint_json: Callable[[Any], Dict[str, Any]]) -> Dict[str, Any]:
    """A version as the API shows it: its model, checkpoint and searcher metric."""
    checkpoint = store.get_checkpoint(v.checkpoint_uuid)
    return {"model": model_json(store.get_model(v.model_name)), "version": v.version,
            "creation_time": iso(v.creation_time),
            "checkpoint": checkpoint_json(checkpoint),
            "searcher_metric": _searcher_metric_json(store, checkpoint)}


def model_versions_json(store: Store, name: str, checkpoint_json: Callable[[Any], Dict[str, Any]],
                        descending: bool = True) -> Dict[str, Any]:
    """``GET /models/{name}/versions``: the model and its versions (raises NotFoundError)."""
    versions = store.list_model_versions(name, descending=descending)
    return {"model": model_json(store.get_model(name)),
            "versions": [model_version_json(store, v, checkpoint_json) for v in versions]}


def registry_router(master: Master, caller: Any,
                    checkpoint_json: Callable[[Any], Dict[str, Any]]) -> fastapi.APIRouter:
    """The ``/models`` routes; ``caller`` gives the calling user, ``checkpoint_json``
    renders a checkpoint record as ``GET /checkpoints/{uuid}`` does."""
    api = fastapi.APIRouter(prefix="/api/v1/models", tags=["models"])
    store = master.store
    Caller = Depends(caller)

    def version_json(v: Any) -> Dict[str, Any]:
        return model_version_json(store, v, checkpoint_json)

    @api.get("")
    def list_models(sort_by: str = Query("name", pattern="^(name|description|creation_time|"
                                                         "last_updated_time|unspecified)$"),
                    order_by: str = Query("asc", pattern="^(asc|desc)$"),
                    name: str = "", description: str = "") -> Dict[str, Any]:
        column = "name" if sort_by == "unspecified" else sort_by
        models = store.list_models(column, order_by == "desc", name, description)
        return {"models": [model_json(r) for r in models]}

    @api.post("/{name}", status_code=201)
    def create_model(name: str, body: NewModel, user: User = Caller) -> Dict[str, Any]:
        if not name.strip() or len(name) > 255:
            raise fail(400, f"Expected a model name of 1-255 characters. Received: {name!r}")
        try:
            return model_json(store.create_model(name, body.description, body.metadata))
        except ConflictError as e:
            raise fail(409, str(e)) from None

    @api.get("/{name}")
    def get_model(name: str) -> Dict[str, Any]:
        return model_json(store.get_model(name))

    @api.patch("/{name}")
    def patch_model(name: str, body: PatchModel, user: User = Caller) -> Dict[str, Any]:
        changes = body.model_dump(exclude_none=True)
        return model_json(store.update_model(name, **changes))

    @api.delete("/{name}")
    def delete_model(name: str, user: User = Caller) -> Dict[str, Any]:
        require_admin(user, "delete models")
        store.delete_model(name)
        return {"name": name}

    @api.get("/{name}/versions")
    def list_versions(name: str, order_by: str = Query("desc", pattern="^(asc|desc)$")
                      ) -> Dict[str, Any]:
        return model_versions_json(store, name, checkpoint_json, descending=order_by == "desc")

    @api.post("/{name}/versions", status_code=201)
    def register_version(name: str, body: NewVersion, user: User = Caller) -> Dict[str, Any]:
        try:
            return version_json(store.register_model_version(name, body.checkpoint_uuid))
        except ValueError as e:
            raise fail(400, str(e)) from None
        except ConflictError as e:
            raise fail(409, str(e)) from None

    @api.get("/{name}/versions/{version}")
    def get_version(name: str, version: int) -> Dict[str, Any]:
        if version < 0:
            raise fail(400, f"Expected a version >= 0 (0: the latest). Received: {version}")
        return version_json(store.get_model_version(name, version))

    return api
