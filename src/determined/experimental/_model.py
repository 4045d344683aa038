"""The model registry in the SDK: :class:`Model` and its sort and order enums.

Example:
    >>> from determined.experimental import Determined, ModelSortBy     # doctest: +SKIP
    >>> d = Determined("localhost:8080")                                # doctest: +SKIP
    >>> model = d.create_model("mnist", description="digits")           # doctest: +SKIP
    >>> model.register_version(d.get_experiment(1).top_checkpoint().uuid)  # doctest: +SKIP
    >>> model.get_version().load()                                      # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import enum
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from determined.experimental._checkpoint import Checkpoint
    from determined.experimental._client import Determined

__all__ = ["Model", "ModelOrderBy", "ModelSortBy"]


class ModelSortBy(enum.Enum):
    """The field :meth:`Determined.get_models` sorts by."""

    UNSPECIFIED = 0
    NAME = 1
    DESCRIPTION = 2
    CREATION_TIME = 4
    LAST_UPDATED_TIME = 5

    def _api(self) -> str:
        return "unspecified" if self is ModelSortBy.UNSPECIFIED else self.name.lower()


class ModelOrderBy(enum.Enum):
    """Ascending or descending order of a sorted list."""

    ASCENDING = 1
    ASC = 1
    DESCENDING = 2
    DESC = 2

    def _api(self) -> str:
        return "asc" if self is ModelOrderBy.ASCENDING else "desc"


def _time(value: Any) -> Optional[datetime.datetime]:
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class Model:
    """A model of the master's registry; its versions are checkpoints.

    Get one from :meth:`Determined.create_model`, :meth:`Determined.get_model` or
    :meth:`Determined.get_models` rather than constructing it.
    """

    def __init__(self, name: str, description: str = "",
                 creation_time: Optional[datetime.datetime] = None,
                 last_updated_time: Optional[datetime.datetime] = None,
                 metadata: Optional[Dict[str, Any]] = None, master: Any = None):
        self.name = name
        self.description = description
        self.creation_time = _time(creation_time)
        self.last_updated_time = _time(last_updated_time)
        self.metadata: Dict[str, Any] = dict(metadata or {})
        self._master = master

    def _det(self) -> "Determined":
        from determined.experimental._client import as_determined

        self._master = as_determined(self._master)
        return self._master

    def _path(self, suffix: str = "") -> str:
        from urllib.parse import quote

        return f"/models/{quote(self.name, safe='')}{suffix}"

    def get_version(self, version: int = 0) -> Optional["Checkpoint"]:
        """The checkpoint of version ``version`` (0: the latest), or None if the model
        has no versions yet."""
        from determined.common.api import APIError

        try:
            data = self._det()._client.request("GET", self._path(f"/versions/{int(version)}"))
        except APIError as e:
            if e.status == 404 and version == 0:
                return None
            raise
        return self._det()._version_checkpoint(data)

    def get_versions(self, order_by: ModelOrderBy = ModelOrderBy.DESC) -> List["Checkpoint"]:
        """Every version's checkpoint, newest first unless ``order_by=ModelOrderBy.ASC``."""
        data = self._det()._client.request("GET", self._path("/versions"),
                                           params={"order_by": ModelOrderBy(order_by)._api()})
        return [self._det()._version_checkpoint(v) for v in data["versions"]]

    def register_version(self, checkpoint_uuid: str) -> "Checkpoint":
        """Add the checkpoint as the model's next version; returns it."""
        data = self._det()._client.request("POST", self._path("/versions"),
                                           json={"checkpoint_uuid": checkpoint_uuid})
        self._update(data["model"])
        return self._det()._version_checkpoint(data)

    def add_metadata(self, metadata: Dict[str, Any]) -> None:
        """Merge ``metadata`` into the model's (top-level keys replaced), on the master."""
        if not isinstance(metadata, dict):
            raise ValueError(f"Expected metadata to be a dict. Received: {metadata!r}")
        merged = {**self._fresh_metadata(), **metadata}
        self._update(self._det()._client.request("PATCH", self._path(),
                                                 json={"metadata": merged}))

    def remove_metadata(self, keys: List[str]) -> None:
        """Drop top-level ``keys`` from the model's metadata, on the master."""
        if isinstance(keys, str):
            keys = [keys]
        kept = {k: v for k, v in self._fresh_metadata().items() if k not in set(keys)}
        self._update(self._det()._client.request("PATCH", self._path(), json={"metadata": kept}))

    def _fresh_metadata(self) -> Dict[str, Any]:
        return dict(self._det()._client.request("GET", self._path())["metadata"] or {})

    def _update(self, data: Dict[str, Any]) -> None:
        fresh = Model.from_json(data, self._master)
        self.description, self.metadata = fresh.description, fresh.metadata
        self.creation_time, self.last_updated_time = fresh.creation_time, fresh.last_updated_time

    def to_json(self) -> Dict[str, Any]:
        """``{name, description, creation_time, last_updated_time, metadata}``."""
        return {
            "name": self.name, "description": self.description,
            "creation_time": self.creation_time.isoformat() if self.creation_time else None,
            "last_updated_time": (self.last_updated_time.isoformat()
                                  if self.last_updated_time else None),
            "metadata": self.metadata,
        }

    @staticmethod
    def from_json(data: Dict[str, Any], master: Any) -> "Model":
        """A Model from the master's JSON (snake_case, or upstream's camelCase)."""
        return Model(data["name"], data.get("description") or "",
                     data.get("creation_time", data.get("creationTime")),
                     data.get("last_updated_time", data.get("lastUpdatedTime")),
                     data.get("metadata") or {}, master)

    def __repr__(self) -> str:
        return f"Model(name={self.name!r}, metadata={self.metadata!r})"
