"""Fetching a master's checkpoint to a local directory: straight from its storage
when this machine can read it, else as a tar streamed by the master
(``GET /api/v1/checkpoints/{uuid}/download``).

``DET_CHECKPOINT_SOURCE`` picks one way: ``storage``, ``master`` or ``auto`` (default).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid as uuidlib
from typing import Any, Mapping

from determined.errors import CheckpointError, StorageError

__all__ = ["fetch_checkpoint"]

logger = logging.getLogger("determined")
_SOURCES = ("auto", "storage", "master")


def fetch_checkpoint(client: Any, storage_config: Mapping[str, Any], uuid: str, dest: str) -> str:
    """Copy checkpoint ``uuid`` into ``dest`` (replaced if it exists); return ``dest``.

    Args:
        client: a :class:`determined.common.api.MasterClient` (for the master's copy), or
            None to read only the storage.
        storage_config: the experiment's ``checkpoint_storage`` section as the API shows
            it (a masked ``secret_key``: this machine's own credentials are used).
    """
    source = os.environ.get("DET_CHECKPOINT_SOURCE", "auto")
    if source not in _SOURCES:
        raise ValueError(f"Expected DET_CHECKPOINT_SOURCE in {_SOURCES}. Received: {source!r}")
    if client is None:
        source = "storage"
    dest = os.path.abspath(dest)
    parent = os.path.dirname(dest)
    scratch = os.path.join(parent, f".partial-{os.path.basename(dest)}-{uuidlib.uuid4().hex[:8]}")
    try:
        os.makedirs(parent, exist_ok=True)
        if source == "master" or not _from_storage(storage_config, uuid, scratch, source):
            _from_master(client, uuid, scratch)
        if os.path.exists(dest):
            shutil.rmtree(dest)
        os.rename(scratch, dest)
    except OSError as e:
        # Writing here failed (a directory not writable, or a full disk): named by where
        # it was asked to go, not by the scratch directory beside it.
        if not str(getattr(e, "filename", "") or "").startswith(parent):
            raise
        raise CheckpointError(f"cannot write checkpoint {uuid} to {dest}: "
                              f"{e.strerror or e}") from e
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def _from_storage(config: Mapping[str, Any], uuid: str, dest: str, source: str) -> bool:
    """Read the store directly; False when this machine cannot (``auto`` only)."""
    try:
        if config.get("type") == "shared_fs":
            path = os.path.join(config["host_path"], config.get("storage_path") or "", uuid)
            if not os.path.isdir(path):  # not mounted here (no directory made on the way)
                raise CheckpointError(f"checkpoint {uuid} is not at {path} on this machine")
            shutil.copytree(path, dest)
            return True
        from determined.config._secrets import MASK
        from determined.storage import build_storage

        if config.get("secret_key") == MASK:  # masked by the API: this machine's own
            config = {k: v for k, v in config.items() if k not in ("access_key", "secret_key")}
        build_storage(config).download(uuid, dest)
        return True
    except (StorageError, CheckpointError, OSError) as e:
        if source == "storage":
            if os.environ.get("DET_CHECKPOINT_SOURCE") == "storage":  # the user's choice
                raise StorageError(
                    f"checkpoint {uuid}: {e} (DET_CHECKPOINT_SOURCE=storage: this machine "
                    "reads the store with its own credentials; unset it to download "
                    "through the master)") from e
            raise
        logger.info("checkpoint %s: storage not readable here (%s); downloading via the master",
                    uuid, e)
        shutil.rmtree(dest, ignore_errors=True)
        return False


def _from_master(client: Any, uuid: str, dest: str) -> None:
    from determined.storage._archive import CHUNK, extract_tar_stream

    with client.stream(f"/checkpoints/{uuid}/download") as response:
        extract_tar_stream(response.iter_bytes(CHUNK), dest)
