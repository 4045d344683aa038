"""``s3`` checkpoint storage: AWS S3 or an S3-compatible store (MinIO, ...) via boto3."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence

from determined.errors import StorageError
from determined.storage._object_store import ObjectStore, ObjectStoreStorageManager

__all__ = ["S3Store", "S3StorageManager"]


#: S3 error codes of a 403 saying the request's credentials were refused.
_REFUSED = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch")


class S3Store(ObjectStore):
    """One S3 bucket. Credentials: ``access_key``/``secret_key`` when given, else
    boto3's usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, profiles,
    instance roles)."""

    scheme = "s3"

    def __init__(self, bucket: str, access_key: Optional[str] = None,
                 secret_key: Optional[str] = None, endpoint_url: Optional[str] = None):
        super().__init__(bucket)
        self._args = (access_key, secret_key, endpoint_url)
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The boto3 client, made on first use (describe() needs none)."""
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> Any:
        try:
            import boto3
            import boto3.s3.transfer
            import botocore.config
        except ImportError:
            raise StorageError(
                "checkpoint_storage.type s3 needs boto3: pip install 'determined[s3]'"
            ) from None
        access_key, secret_key, endpoint_url = self._args
        session = boto3.session.Session(aws_access_key_id=access_key,
                                        aws_secret_access_key=secret_key)
        # Multipart in 8 MiB parts: big files are streamed, never held in memory.
        self._transfer = boto3.s3.transfer.TransferConfig(use_threads=False)
        # boto3 clients are thread safe; one pool connection per parallel transfer.
        return session.client(
            "s3", endpoint_url=endpoint_url,
            config=botocore.config.Config(max_pool_connections=32, connect_timeout=10,
                                          retries={"max_attempts": 5, "mode": "standard"}),
        )

    def missing_bucket(self, ambient_credentials: bool = False) -> Optional[str]:
        try:
            import boto3
            import botocore.config
            import botocore.exceptions
        except ImportError:
            return None
        access_key, secret_key, endpoint_url = self._args
        # A client of its own: one quick try, not the transfers' retries.
        session = boto3.session.Session(aws_access_key_id=access_key,
                                        aws_secret_access_key=secret_key)
        client = session.client("s3", endpoint_url=endpoint_url, config=botocore.config.Config(
            connect_timeout=3, read_timeout=5, retries={"max_attempts": 1, "mode": "standard"}))
        try:
            # A GET, not HEAD: its error names the S3 code, so a 404 of something that
            # is no S3 server (a proxy, a wrong endpoint path) is not taken for one.
            client.list_objects_v2(Bucket=self.bucket, MaxKeys=1)
        except botocore.exceptions.ClientError as e:
            code = str(e.response.get("Error", {}).get("Code"))
            where = f" at {endpoint_url}" if endpoint_url else ""
            if code == "NoSuchBucket":
                return f"bucket {self.bucket!r} does not exist{where}"
            if code == "InvalidBucketName":
                return f"{self.bucket!r} is not a valid S3 bucket name{where}"
            # The config's own keys, or (ambient_credentials) those the trials find
            # here too: they will send these very ones.
            whose = _whose_credentials(session, access_key, secret_key, ambient_credentials)
            if code in _REFUSED and whose:
                message = e.response.get("Error", {}).get("Message") or ""
                return (f"bucket {self.bucket!r}{where} refused the credentials {whose} "
                        f"({code} (HTTP 403): {message})")
            return None  # credentials from elsewhere: the agents' may differ
        except (botocore.exceptions.BotoCoreError, ValueError):
            return None  # no credentials or no connection from here
        return None

    def upload_file(self, local_path: str, key: str) -> None:
        client = self.client
        client.upload_file(local_path, self.bucket, key, Config=self._transfer)

    def download_file(self, key: str, local_path: str) -> None:
        client = self.client
        client.download_file(self.bucket, key, local_path, Config=self._transfer)

    def list_keys(self, prefix: str) -> List[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", ())]

    def list_sizes(self, prefix: str) -> Dict[str, int]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix)
        return {o["Key"]: int(o["Size"]) for page in pages for o in page.get("Contents", ())}

    def list_dirs(self, prefix: str) -> List[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix, Delimiter="/")
        return sorted(p["Prefix"][len(prefix):].rstrip("/")
                      for page in pages for p in page.get("CommonPrefixes", ()))

    def exists(self, key: str) -> bool:
        import botocore.exceptions

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except botocore.exceptions.ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def delete_keys(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 1000):  # the API's limit per request
            chunk = keys[start:start + 1000]
            answer = self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": k} for k in chunk], "Quiet": True})
            # A batch delete answers 200 and lists the keys it could not delete.
            failed = answer.get("Errors") or []
            if failed:
                first = failed[0]
                raise StorageError(
                    f"S3 bucket {self.bucket!r} did not delete {len(failed)} of "
                    f"{len(chunk)} object(s); the first, {first.get('Key')!r}: "
                    f"{first.get('Code')} ({first.get('Message')})")


def _whose_credentials(session: Any, access_key: Optional[str], secret_key: Optional[str],
                       ambient: bool) -> Optional[str]:
    """Names the credentials ``session`` sent, for a message: the config's keys, or
    (``ambient``) where boto3 found them; None for ambient ones when not ``ambient``."""
    if access_key and secret_key:
        return "checkpoint_storage.access_key/secret_key"
    if not ambient:
        return None
    found = session.get_credentials()
    method = getattr(found, "method", None)
    if method == "env":
        return ("from the environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; the config "
                "gives no checkpoint_storage.access_key/secret_key)")
    return (f"boto3 found outside the config ({method or 'unknown source'}; the config "
            "gives no checkpoint_storage.access_key/secret_key)")


class S3StorageManager(ObjectStoreStorageManager):
    """Checkpoints under ``s3://bucket/[prefix/]<uuid>/``.

    Example:
        >>> S3StorageManager("ckpts", prefix="team-a", endpoint_url="http://minio:9000")  # doctest: +SKIP
    """

    def __init__(self, bucket: str, prefix: Optional[str] = None,
                 access_key: Optional[str] = None, secret_key: Optional[str] = None,
                 endpoint_url: Optional[str] = None):
        super().__init__(S3Store(bucket, access_key, secret_key, endpoint_url), prefix)
