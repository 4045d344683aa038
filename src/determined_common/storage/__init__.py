"""Checkpoint storage as upstream 0.13's ``determined_common.storage`` exposed it.

``build(config)`` returns this platform's storage manager for a
``checkpoint_storage`` section (``determined.storage``).
"""

from typing import Any, Dict, Optional

from determined_common.check import check_eq, check_in, check_type

__all__ = ["build", "check_eq", "check_in", "check_type", "validate_config", "validate_manager"]

_TYPES = ("shared_fs", "s3", "gcs", "hdfs")


def validate_config(config: Dict[str, Any], container_path: Optional[str] = None) -> None:
    """Raise a clear error unless ``config`` is a valid ``checkpoint_storage`` section."""
    from determined.config import validate_config as validate_experiment

    check_type(config, dict, "checkpoint_storage")
    check_in(config.get("type"), _TYPES, "checkpoint_storage.type")
    validate_experiment({
        "entrypoint": "model_def:Trial",
        "hyperparameters": {"global_batch_size": 1},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 1}},
        "checkpoint_storage": config,
    }, source="checkpoint_storage")


def validate_manager(manager: Any) -> None:
    """Raise unless ``manager`` is a storage manager of this platform."""
    from determined.storage import StorageManager

    if not isinstance(manager, StorageManager):
        raise TypeError(f"Expected a determined.storage.StorageManager. Received: {manager!r}")


def build(config: Dict[str, Any], container_path: Optional[str] = None) -> Any:
    """The storage manager for a ``checkpoint_storage`` section (``container_path`` is
    accepted for compatibility: there are no containers, paths are used as given)."""
    from determined.storage import build_storage

    validate_config(config, container_path)
    manager = build_storage(config)
    validate_manager(manager)
    return manager
