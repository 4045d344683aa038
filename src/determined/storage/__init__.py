"""Checkpoint storage backends, atomic checkpoint writes and checkpoint metadata."""

from typing import Any, Mapping

from determined.errors import StorageError
from determined.storage._base import StorageManager
from determined.storage._gc import CheckpointRecord, checkpoints_to_keep
from determined.storage._metadata import METADATA_FILE, copy_code, read_metadata, write_metadata
from determined.storage._shared_fs import SharedFSStorageManager

__all__ = [
    "CheckpointRecord",
    "checkpoints_to_keep",
    "METADATA_FILE",
    "SharedFSStorageManager",
    "StorageManager",
    "build_storage",
    "copy_code",
    "read_metadata",
    "write_metadata",
]


def build_storage(config: Mapping[str, Any]) -> StorageManager:
    """The storage manager for a validated ``checkpoint_storage`` section."""
    kind = config.get("type")
    if kind == "shared_fs":
        return SharedFSStorageManager(config["host_path"], config.get("storage_path"))
    if kind in ("s3", "gcs", "hdfs"):
        raise StorageError(
            f"checkpoint_storage.type {kind!r} is accepted in configs but not available in "
            "this installation; use type: shared_fs"
        )
    raise StorageError(f"Expected checkpoint_storage.type shared_fs. Received: {kind!r}")
