"""``gcs`` checkpoint storage: Google Cloud Storage via google-cloud-storage.

Credentials are Google's application defaults (``GOOGLE_APPLICATION_CREDENTIALS``,
the metadata server, ...). With ``STORAGE_EMULATOR_HOST`` set, the client talks
to that emulator without credentials.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from determined.errors import StorageError
from determined.storage._object_store import ObjectStore, ObjectStoreStorageManager, thread_local

__all__ = ["GCSStore", "GCSStorageManager"]

#: Resumable uploads and ranged downloads in chunks of this size (streaming).
CHUNK_SIZE = 8 * 1024 * 1024


class GCSStore(ObjectStore):
    """One GCS bucket (a client per thread: their HTTP sessions are not shared)."""

    scheme = "gs"

    def _bucket(self) -> Any:
        try:
            from google.cloud import storage
        except ImportError:
            raise StorageError(
                "checkpoint_storage.type gcs needs google-cloud-storage: "
                "pip install 'determined[gcs]'"
            ) from None
        client = thread_local(f"gcs-client-{id(self)}", storage.Client)
        return client.bucket(self.bucket)

    def missing_bucket(self, ambient_credentials: bool = False) -> Optional[str]:
        try:
            exists = self._bucket().exists(timeout=5)
        except Exception:  # no credentials or no connection from here: cannot tell
            return None
        return None if exists else f"bucket {self.bucket!r} does not exist"

    def upload_file(self, local_path: str, key: str) -> None:
        self._bucket().blob(key, chunk_size=CHUNK_SIZE).upload_from_filename(local_path)

    def download_file(self, key: str, local_path: str) -> None:
        self._bucket().blob(key, chunk_size=CHUNK_SIZE).download_to_filename(local_path)

    def list_keys(self, prefix: str) -> List[str]:
        return [b.name for b in self._bucket().list_blobs(prefix=prefix)]

    def list_sizes(self, prefix: str) -> Dict[str, int]:
        return {b.name: int(b.size or 0) for b in self._bucket().list_blobs(prefix=prefix)}

    def list_dirs(self, prefix: str) -> List[str]:
        blobs = self._bucket().list_blobs(prefix=prefix, delimiter="/")
        for _ in blobs:  # prefixes are known once the pages are read
            pass
        return sorted(p[len(prefix):].rstrip("/") for p in blobs.prefixes)

    def exists(self, key: str) -> bool:
        return bool(self._bucket().blob(key).exists())

    def delete_keys(self, keys: Sequence[str]) -> None:
        from google.api_core.exceptions import NotFound

        bucket = self._bucket()
        for key in keys:
            try:
                bucket.blob(key).delete()
            except NotFound:
                pass


class GCSStorageManager(ObjectStoreStorageManager):
    """Checkpoints under ``gs://bucket/[prefix/]<uuid>/``."""

    def __init__(self, bucket: str, prefix: Optional[str] = None):
        super().__init__(GCSStore(bucket), prefix)
