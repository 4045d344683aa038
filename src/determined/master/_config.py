"""The master's configuration: defaults, overridden by a YAML file and flags.

Example ``master.yaml``::

    port: 8080
    data_dir: ~/.determined/master
    db: sqlite:////var/lib/determined/master.db
    checkpoint_storage: {type: shared_fs, host_path: /mnt/checkpoints}
    resource_manager:
      slots: 4
      scheduler: {type: fair_share, fit: best}
"""

from __future__ import annotations

import os
from typing import Any, Dict, Literal, Optional

import pydantic

from determined._procs._gpus import default_slots
from determined.config._secrets import masked_section
from determined.launch._machines import CHIEF_GRACE_SECONDS
import yaml

__all__ = ["MasterConfig", "SchedulerConfig", "ResourceManagerConfig", "SecurityConfig",
           "LimitsConfig",
           "default_data_dir", "load_master_config"]


def default_data_dir() -> str:
    return os.environ.get("DET_MASTER_DATA_DIR") or os.path.join(
        os.path.expanduser("~"), ".determined", "master"
    )


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class SchedulerConfig(_Strict):
    type: Literal["fair_share", "priority"] = "fair_share"
    fit: Literal["best", "worst"] = "best"


class ResourceManagerConfig(_Strict):
    #: ``embedded``: our agents (the master's own slots and remote agents); ``ray``:
    #: trials run on the Ray cluster at ``address`` (``slots`` is ignored).
    type: Literal["embedded", "agent", "ray"] = "embedded"
    #: The Ray cluster's address (``HOST:PORT`` of its head) for ``type: ray``.
    address: Optional[str] = None
    #: CPUs per slot on Ray nodes without GPUs (a GPU is a slot where there are any).
    cpus_per_slot: float = pydantic.Field(default=1.0, gt=0)
    #: Slots of the embedded agent (trials on the master's machine); 0: none, only
    #: remote agents (``python -m determined.agent --master URL``) run trials.
    #: Slots the embedded agent offers per GPU of the master's machine: that many trials
    #: share each GPU, each capped at ``gpu_memory_fraction`` of its memory.
    slots_per_gpu: int = pydantic.Field(default=1, ge=1)
    #: Each slot's cap on its GPU's memory (default ``1 / slots_per_gpu``; no cap with
    #: one slot per GPU). For the embedded agent; remote agents take
    #: ``det-agent --slots-per-gpu / --gpu-memory-fraction``.
    gpu_memory_fraction: Optional[float] = pydantic.Field(default=None, gt=0, le=1)
    #: Seconds between the embedded agent's readings of each busy GPU (NVML).
    gpu_metrics_interval: float = pydantic.Field(default=5.0, gt=0)
    slots: int = pydantic.Field(
        default_factory=lambda data: default_slots(data.get("slots_per_gpu", 1)), ge=0)
    #: Seconds without a request from a remote agent before it counts as lost: its
    #: trials count as crashed and its slots leave the cluster.
    agent_timeout: float = pydantic.Field(default=30.0, gt=0)
    #: Seconds the other machines of a trial spanning agents or Ray nodes get to end
    #: after its chief ended cleanly; then they are killed (the trial still succeeds).
    chief_grace: float = pydantic.Field(default=CHIEF_GRACE_SECONDS, ge=0)
    scheduler: SchedulerConfig = pydantic.Field(default_factory=SchedulerConfig)

    @pydantic.model_validator(mode="after")
    def _ray_address(self) -> "ResourceManagerConfig":
        if self.type == "ray" and not self.address:
            raise ValueError("resource_manager.type ray needs resource_manager.address "
                             "(the Ray head's HOST:PORT, e.g. 10.0.0.1:6379)")
        return self


class SecurityConfig(_Strict):
    """Who may call the REST API (users and sessions: ``determined.master.api._auth``)."""

    #: Requests without a bearer token act as user ``determined`` (upstream's default
    #: user with a blank password); false makes them fail with 401.
    allow_anonymous: bool = True
    #: How long a login session lasts.
    session_ttl_hours: float = pydantic.Field(default=168.0, gt=0)
    #: A shared secret remote agents must send (``det-agent --token``); unset: any
    #: agent that reaches the master may register.
    agent_token: Optional[str] = pydantic.Field(default=None, min_length=1)


class LimitsConfig(_Strict):
    """What one client may make the master hold: checked before anything is parsed
    or stored, refused with a 4xx naming the limit (README, "Limits")."""

    #: Bytes of one request body (413 above; an experiment's base64 context included).
    max_request_bytes: int = pydantic.Field(default=150_000_000, ge=1024)
    #: Bytes of an experiment config or template given as YAML text (413 above).
    max_config_bytes: int = pydantic.Field(default=1024 * 1024, ge=1024)
    #: Mapping keys in one config (400 above).
    max_config_keys: int = pydantic.Field(default=10_000, ge=10)
    #: Nesting levels of one config (400 above).
    max_config_depth: int = pydantic.Field(default=32, ge=4)
    #: A context archive's unpacked files may be this many times its packed size
    #: (contexts under ``min_context_ratio_bytes`` unpacked are exempt); 400 above.
    max_context_ratio: float = pydantic.Field(default=100.0, ge=1.0)
    min_context_ratio_bytes: int = pydantic.Field(default=64 * 1024 * 1024, ge=0)
    #: Unpacked bytes of the stored contexts of one user's experiments (413 above).
    max_context_bytes_per_user: int = pydantic.Field(default=8 * 1024**3, ge=0)
    #: Unpacked bytes of all stored contexts of the master (413 above).
    max_context_bytes_total: int = pydantic.Field(default=32 * 1024**3, ge=0)


class MasterConfig(_Strict):
    """Everything the master needs to start. Unset paths derive from ``data_dir``."""

    host: str = "127.0.0.1"
    port: int = pydantic.Field(default=8080, ge=0, le=65535)
    data_dir: str = pydantic.Field(default_factory=default_data_dir)
    db: Optional[str] = None
    checkpoint_storage: Optional[Dict[str, Any]] = None
    resource_manager: ResourceManagerConfig = pydantic.Field(default_factory=ResourceManagerConfig)
    security: SecurityConfig = pydantic.Field(default_factory=SecurityConfig)
    limits: LimitsConfig = pydantic.Field(default_factory=LimitsConfig)
    #: Seconds a TensorBoard task may go without a proxied request before it is killed.
    tensorboard_timeout: float = pydantic.Field(default=300.0, gt=0)
    #: The same for notebooks; unset: notebooks are never reaped.
    notebook_timeout: Optional[float] = pydantic.Field(default=None, gt=0)

    @pydantic.model_validator(mode="after")
    def _derive(self) -> "MasterConfig":
        self.data_dir = os.path.abspath(os.path.expanduser(self.data_dir))
        if self.db is None:
            self.db = "sqlite:///" + os.path.join(self.data_dir, "master.db")
        if self.checkpoint_storage is None:
            self.checkpoint_storage = {
                "type": "shared_fs", "host_path": os.path.join(self.data_dir, "checkpoints"),
            }
        return self

    def public(self) -> Dict[str, Any]:
        """The config as served by ``GET /api/v1/master/config`` (no passwords in URLs)."""
        data = self.model_dump()
        db = data.get("db") or ""
        if "@" in db:
            scheme, rest = db.split("://", 1)
            data["db"] = f"{scheme}://***@{rest.split('@', 1)[1]}"
        if data.get("security", {}).get("agent_token"):
            data["security"]["agent_token"] = "***"
        data["checkpoint_storage"] = masked_section(data.get("checkpoint_storage"))
        return data


def load_master_config(path: Optional[str] = None, **overrides: Any) -> MasterConfig:
    """Read ``path`` (YAML; optional), then apply non-None ``overrides``.

    ``slots`` and ``scheduler`` overrides go to ``resource_manager``.

    Raises:
        ValueError: naming every invalid field.
    """
    raw: Dict[str, Any] = {}
    if path:
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"Expected master config {path} to be a mapping. Received: {loaded!r}")
        raw.update(loaded)
    rm = dict(raw.get("resource_manager") or {})
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "slots":
            rm["slots"] = value
        else:
            raw[key] = value
    if rm:
        raw["resource_manager"] = rm
    try:
        return MasterConfig.model_validate(raw)
    except pydantic.ValidationError as e:
        lines = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in e.errors()
        )
        raise ValueError(f"Invalid master config: {lines}") from None
