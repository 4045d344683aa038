"""The experiment config schema (SPEC section 2), as pydantic models.

Only shape and value checks live here. Legacy aliases are rewritten before these
models see the config (``_legacy``); hyperparameter leaves are tagged so each
kind validates as one branch of a discriminated union (``_hparams``).
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import Annotated

from determined.common.entrypoint import check_entrypoint
from determined.config._units import Length

__all__ = ["ExperimentConfigModel", "check_labels", "SEARCHER_NAMES", "STORAGE_TYPES",
           "HPARAM_TYPES"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_length(value: Any) -> Dict[str, int]:
    return Length.from_dict(value).to_dict()


LengthField = Annotated[Dict[str, Any], Field(json_schema_extra={"format": "length"})]


def _length_validator(*names: str) -> Any:
    def check(cls: Any, value: Any) -> Any:
        if value is None:
            return value
        return _check_length(value)

    return field_validator(*names, mode="before")(check)


# ---------------------------------------------------------------- hyperparameters


class ConstHP(_Strict):
    type: Literal["const"]
    val: Any


class _Numeric(_Strict):
    count: Optional[int] = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _min_below_max(self) -> "_Numeric":
        if not self.minval < self.maxval:  # type: ignore[attr-defined]
            raise ValueError(
                "Expected minval < maxval. "
                f"Received: minval={self.minval}, maxval={self.maxval}"  # type: ignore
            )
        return self


class IntHP(_Numeric):
    type: Literal["int"]
    minval: int
    maxval: int


class DoubleHP(_Numeric):
    type: Literal["double"]
    minval: float
    maxval: float


class LogHP(_Numeric):
    type: Literal["log"]
    minval: float
    maxval: float
    base: float = Field(default=10.0, gt=0)


class CategoricalHP(_Strict):
    type: Literal["categorical"]
    vals: List[Any] = Field(min_length=1)


class ObjectHP(_Strict):
    """A nested map of hyperparameters (tagged internally; users write a plain map)."""

    type: Literal["object"]
    vals: Dict[str, "HParam"]


HParam = Annotated[
    Union[ConstHP, IntHP, DoubleHP, LogHP, CategoricalHP, ObjectHP],
    Field(discriminator="type"),
]
ObjectHP.model_rebuild()
HPARAM_TYPES = ("const", "int", "double", "log", "categorical")

# ---------------------------------------------------------------- searchers


class _SearcherBase(_Strict):
    metric: str
    smaller_is_better: bool = True
    source_trial_id: Optional[int] = None
    source_checkpoint_uuid: Optional[str] = None

    @model_validator(mode="after")
    def _one_source(self) -> "_SearcherBase":
        if self.source_trial_id is not None and self.source_checkpoint_uuid is not None:
            raise ValueError(
                "Expected at most one of source_trial_id and source_checkpoint_uuid. "
                f"Received: source_trial_id={self.source_trial_id}, "
                f"source_checkpoint_uuid={self.source_checkpoint_uuid!r}"
            )
        return self


Mode = Literal["aggressive", "standard", "conservative"]
Sampler = Literal["random", "tpe"]  # searcher.sampler: determined.searcher._sampler


def _time_fields(model: Any, length_required: bool) -> Any:
    """``time_metric`` and ``max_time`` (Determined 0.38) come together and replace
    ``max_length``; searchers that need a length need one of the two."""
    tm, mt, ml = model.time_metric, model.max_time, model.max_length
    if (tm is None) != (mt is None):
        raise ValueError(
            "Expected searcher.time_metric and searcher.max_time together. Received: "
            f"time_metric={tm!r}, max_time={mt!r}")
    if tm is not None and ml is not None:
        raise ValueError(
            "Expected either searcher.max_length or searcher.time_metric with "
            f"searcher.max_time, not both. Received: max_length={ml}, time_metric={tm!r}")
    if length_required and tm is None and ml is None:
        raise ValueError(
            "Expected searcher.max_length, or searcher.time_metric with searcher.max_time")
    return model


class _SelfPacedFields(BaseModel):
    """Searchers whose trials may train their own length (script entrypoints): without
    ``max_length`` each trial runs until its script exits."""

    max_length: Optional[Dict[str, Any]] = None
    time_metric: Optional[str] = Field(default=None, min_length=1)
    max_time: Optional[int] = Field(default=None, gt=0)


class SingleSearcher(_SearcherBase, _SelfPacedFields):
    name: Literal["single"]
    _v = _length_validator("max_length")

    @model_validator(mode="after")
    def _time(self) -> "SingleSearcher":
        return _time_fields(self, length_required=False)


class RandomSearcher(_SearcherBase, _SelfPacedFields):
    name: Literal["random"]
    max_trials: int = Field(gt=0)
    max_concurrent_trials: int = Field(default=0, ge=0)
    sampler: Sampler = "random"
    _v = _length_validator("max_length")

    @model_validator(mode="after")
    def _time(self) -> "RandomSearcher":
        return _time_fields(self, length_required=False)


class GridSearcher(_SearcherBase, _SelfPacedFields):
    name: Literal["grid"]
    max_concurrent_trials: int = Field(default=0, ge=0)
    _v = _length_validator("max_length")

    @model_validator(mode="after")
    def _time(self) -> "GridSearcher":
        return _time_fields(self, length_required=False)


class _Adaptive(_SearcherBase):
    max_length: Dict[str, Any]
    mode: Mode = "standard"
    divisor: float = Field(default=4.0, gt=1)
    max_rungs: int = Field(default=5, gt=0)
    sampler: Sampler = "random"
    bracket_rungs: Optional[List[int]] = None  # accepted as 0.13 did (see config_warnings)
    _v = _length_validator("max_length")


class AdaptiveAshaSearcher(_Adaptive, _SelfPacedFields):
    name: Literal["adaptive_asha"]
    max_length: Optional[Dict[str, Any]] = None  # or time_metric + max_time
    max_trials: int = Field(gt=0)
    max_concurrent_trials: int = Field(default=0, ge=0)
    stop_once: bool = False

    @model_validator(mode="after")
    def _time(self) -> "AdaptiveAshaSearcher":
        return _time_fields(self, length_required=True)


class AdaptiveSimpleSearcher(_Adaptive):
    name: Literal["adaptive_simple"]
    max_trials: int = Field(gt=0, le=2000)


class AdaptiveSearcher(_Adaptive):
    name: Literal["adaptive"]
    budget: Dict[str, Any]
    train_stragglers: bool = True
    _vb = _length_validator("budget")

    @model_validator(mode="after")
    def _budget_over_length(self) -> "AdaptiveSearcher":
        b, m = Length.from_dict(self.budget), Length.from_dict(self.max_length)
        if b.unit != m.unit:
            raise ValueError(
                "Expected budget and max_length in the same unit. "
                f"Received: budget={self.budget}, max_length={self.max_length}"
            )
        if b.units <= m.units:
            raise ValueError(
                f"Expected budget > max_length. Received: budget={self.budget}, "
                f"max_length={self.max_length}"
            )
        return self


class _Replace(_Strict):
    truncate_fraction: float = Field(ge=0, le=0.5)


class _Explore(_Strict):
    resample_probability: float = Field(ge=0, le=1)
    perturb_factor: float = Field(ge=0, le=1)


class PBTSearcher(_SearcherBase):
    name: Literal["pbt"]
    population_size: int = Field(gt=0)
    num_rounds: int = Field(gt=0)
    length_per_round: Dict[str, Any]
    replace_function: _Replace
    explore_function: _Explore
    _v = _length_validator("length_per_round")


SearcherConfig = Annotated[
    Union[
        SingleSearcher,
        RandomSearcher,
        GridSearcher,
        AdaptiveAshaSearcher,
        AdaptiveSimpleSearcher,
        AdaptiveSearcher,
        PBTSearcher,
    ],
    Field(discriminator="name"),
]
SEARCHER_NAMES = (
    "single", "random", "grid", "adaptive_asha", "adaptive_simple", "adaptive", "pbt",
)

# ---------------------------------------------------------------- storage


class _StorageBase(_Strict):
    save_experiment_best: int = Field(default=0, ge=0)
    save_trial_best: int = Field(default=1, ge=0)
    save_trial_latest: int = Field(default=1, ge=0)


class SharedFSStorage(_StorageBase):
    type: Literal["shared_fs"]
    host_path: str
    storage_path: Optional[str] = None
    propagation: str = "rprivate"
    container_path: Optional[str] = None
    checkpoint_path: Optional[str] = None
    tensorboard_path: Optional[str] = None

    @field_validator("host_path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not posixpath.isabs(value):
            raise ValueError(f"Expected an absolute path. Received: host_path={value!r}")
        return value

    @model_validator(mode="after")
    def _inside(self) -> "SharedFSStorage":
        if self.storage_path is not None:
            full = posixpath.normpath(posixpath.join(self.host_path, self.storage_path))
            root = posixpath.normpath(self.host_path)
            if full != root and not full.startswith(root.rstrip("/") + "/"):
                raise ValueError(
                    "Expected storage_path to lie inside host_path. "
                    f"Received: storage_path={self.storage_path!r}"
                )
        return self


class S3Storage(_StorageBase):
    type: Literal["s3"]
    bucket: str
    prefix: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None
    endpoint_url: Optional[str] = None


class GCSStorage(_StorageBase):
    type: Literal["gcs"]
    bucket: str
    prefix: Optional[str] = None


class HDFSStorage(_StorageBase):
    type: Literal["hdfs"]
    hdfs_url: str
    hdfs_path: str
    user: Optional[str] = None


CheckpointStorage = Annotated[
    Union[SharedFSStorage, S3Storage, GCSStorage, HDFSStorage], Field(discriminator="type")
]
STORAGE_TYPES = ("shared_fs", "s3", "gcs", "hdfs")

# ---------------------------------------------------------------- the rest


class Resources(_Strict):
    slots_per_trial: int = Field(default=1, ge=1)
    max_slots: Optional[int] = Field(default=None, ge=1)
    weight: float = Field(default=1.0, gt=0)
    priority: Optional[int] = Field(default=None, ge=1, le=99)
    native_parallel: bool = False
    shm_size: Optional[int] = None
    agent_label: str = ""

    @model_validator(mode="after")
    def _slots(self) -> "Resources":
        if self.max_slots is not None and self.max_slots < self.slots_per_trial:
            raise ValueError(
                "Expected max_slots >= slots_per_trial. "
                f"Received: max_slots={self.max_slots}, slots_per_trial={self.slots_per_trial}"
            )
        return self


class Optimizations(_Strict):
    aggregation_frequency: int = Field(default=1, ge=1)
    average_aggregated_gradients: bool = True
    average_training_metrics: bool = False
    gradient_compression: bool = False
    mixed_precision: Literal["O0", "O1", "O2", "O3"] = "O0"
    tensor_fusion_threshold: int = Field(default=64, ge=0)
    tensor_fusion_cycle_time: int = Field(default=5, ge=0)
    auto_tune_tensor_fusion: bool = False


class Reproducibility(_Strict):
    experiment_seed: Optional[int] = Field(default=None, ge=0, le=2**31 - 1)


class RegistryAuth(_Strict):
    username: Optional[str] = None
    password: Optional[str] = None
    server: Optional[str] = None
    email: Optional[str] = None


class Environment(_Strict):
    environment_variables: Union[List[str], Dict[str, List[str]]] = Field(default_factory=list)
    image: Optional[Union[str, Dict[str, str]]] = None
    force_pull_image: bool = False
    registry_auth: Optional[RegistryAuth] = None
    ports: Dict[str, int] = Field(default_factory=dict)
    pod_spec: Optional[Dict[str, Any]] = None

    @field_validator("environment_variables")
    @classmethod
    def _name_value(cls, value: Any) -> Any:
        lists = value.values() if isinstance(value, dict) else [value]
        if isinstance(value, dict):
            bad_keys = set(value) - {"cpu", "gpu"}
            if bad_keys:
                raise ValueError(f"Expected keys cpu and gpu. Received: {sorted(bad_keys)}")
        for entries in lists:
            for entry in entries:
                if "=" not in entry or entry.startswith("="):
                    raise ValueError(f"Expected NAME=VALUE. Received: {entry!r}")
        return value


class BindMount(_Strict):
    host_path: str
    container_path: str
    read_only: bool = False
    propagation: str = "rprivate"

    @field_validator("container_path")
    @classmethod
    def _not_dot(cls, value: str) -> str:
        if value == ".":
            raise ValueError("Expected a container_path other than '.'")
        return value


class DataLayer(_Strict):
    type: Literal["shared_fs", "s3", "gcs", "lfs"] = "shared_fs"
    host_storage_path: Optional[str] = None
    container_storage_path: Optional[str] = None
    bucket: Optional[str] = None
    bucket_directory_path: Optional[str] = None
    local_cache_host_path: Optional[str] = None
    local_cache_container_path: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None
    endpoint_url: Optional[str] = None


def check_labels(labels: List[str]) -> List[str]:
    """``labels`` unchanged, or ValueError when one is empty or blank (a label that
    shows as nothing and that no filter could name)."""
    blank = [label for label in labels if not label.strip()]
    if blank:
        raise ValueError(f"Expected non-empty labels. Received: {blank[0]!r} in {labels!r}")
    return labels


class ExperimentConfigModel(_Strict):
    entrypoint: Optional[Union[str, List[str]]] = None
    name: Optional[str] = None  # 0.38's name; shown as the description when none is given
    description: Optional[str] = None
    labels: List[str] = Field(default_factory=list)
    data: Dict[str, Any] = Field(default_factory=dict)
    min_validation_period: Optional[Dict[str, Any]] = None
    min_checkpoint_period: Optional[Dict[str, Any]] = None
    perform_initial_validation: bool = False
    checkpoint_policy: Literal["best", "all", "none"] = "best"
    scheduling_unit: int = Field(default=100, gt=0)
    records_per_epoch: int = Field(default=0, ge=0)
    max_restarts: int = Field(default=5, ge=0)
    hyperparameters: Dict[str, HParam]
    searcher: SearcherConfig
    resources: Resources = Field(default_factory=Resources)
    optimizations: Optimizations = Field(default_factory=Optimizations)
    checkpoint_storage: Optional[CheckpointStorage] = None
    reproducibility: Reproducibility = Field(default_factory=Reproducibility)
    environment: Environment = Field(default_factory=Environment)
    bind_mounts: List[BindMount] = Field(default_factory=list)
    data_layer: DataLayer = Field(default_factory=DataLayer)
    tensorboard_storage: Optional[Dict[str, Any]] = None
    security: Optional[Dict[str, Any]] = None
    debug: bool = False
    internal: Optional[Dict[str, Any]] = None

    _v = _length_validator("min_validation_period", "min_checkpoint_period")

    @field_validator("entrypoint", mode="before")
    @classmethod
    def _entrypoint(cls, value: Any) -> Any:
        return check_entrypoint(value)

    @field_validator("labels")
    @classmethod
    def _label_set(cls, value: List[str]) -> List[str]:
        return list(dict.fromkeys(check_labels(value)))

    @model_validator(mode="after")
    def _batch_size(self) -> "ExperimentConfigModel":
        # global_batch_size < slots_per_trial is accepted here, as 0.13 accepted it: the
        # trial checks it when it starts (harness.TrialContext).
        gbs = self.hyperparameters.get("global_batch_size")
        if gbs is None:
            return self  # reported before schema validation, with the other missing fields
        values = _numeric_values(gbs)
        if not values or any(v <= 0 for v in values):
            raise ValueError(
                "hyperparameters.global_batch_size: Expected a positive integer, an int "
                "range or a categorical of positive integers."
            )
        return self


def _numeric_values(spec: Any) -> Optional[List[float]]:
    """Every value a batch-size hyperparameter can take, or None if not integral."""
    if isinstance(spec, ConstHP):
        vals = [spec.val]
    elif isinstance(spec, CategoricalHP):
        vals = spec.vals
    elif isinstance(spec, IntHP):
        vals = [spec.minval, spec.maxval]
    else:
        return None
    if any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
        return None
    return vals
