"""Checkpoint storage backends, atomic checkpoint writes and checkpoint metadata."""

from typing import Any, Mapping

from determined.errors import StorageError
from determined.storage._base import Selector, StorageManager, checkpoint_ref_uuid
from determined.storage._gc import CheckpointRecord, checkpoints_to_keep
from determined.storage._metadata import METADATA_FILE, copy_code, read_metadata, write_metadata
from determined.storage._object_store import ObjectStore, ObjectStoreStorageManager
from determined.storage._owners import owns_checkpoint, owns_scratch, scratch_tag
from determined.storage._shared_fs import SharedFSStorageManager, missing_host_path

__all__ = [
    "CheckpointRecord",
    "checkpoints_to_keep",
    "METADATA_FILE",
    "ObjectStore",
    "ObjectStoreStorageManager",
    "Selector",
    "SharedFSStorageManager",
    "StorageManager",
    "build_storage",
    "checkpoint_ref_uuid",
    "missing_host_path",
    "owns_checkpoint",
    "owns_scratch",
    "scratch_tag",
    "copy_code",
    "read_metadata",
    "write_metadata",
]


def build_storage(config: Mapping[str, Any]) -> StorageManager:
    """The storage manager for a validated ``checkpoint_storage`` section.

    ``shared_fs`` (``host_path``, ``storage_path``); ``s3`` (``bucket``, ``prefix``,
    ``access_key``, ``secret_key``, ``endpoint_url``); ``gcs`` (``bucket``, ``prefix``).
    The object stores' client libraries are imported only when used.
    """
    kind = config.get("type")
    if kind == "shared_fs":
        return SharedFSStorageManager(config["host_path"], config.get("storage_path"))
    if kind == "s3":
        from determined.storage._s3 import S3StorageManager

        return S3StorageManager(
            config["bucket"], prefix=config.get("prefix"),
            access_key=config.get("access_key"), secret_key=config.get("secret_key"),
            endpoint_url=config.get("endpoint_url"),
        )
    if kind == "gcs":
        from determined.storage._gcs import GCSStorageManager

        return GCSStorageManager(config["bucket"], prefix=config.get("prefix"))
    if kind == "hdfs":
        raise StorageError(
            "checkpoint_storage.type 'hdfs' is accepted in configs but not available in "
            "this installation; use type shared_fs, s3 or gcs"
        )
    raise StorageError(
        f"Expected checkpoint_storage.type shared_fs, s3 or gcs. Received: {kind!r}")
