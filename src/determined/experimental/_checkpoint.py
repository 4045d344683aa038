"""Using trained models: a checkpoint on disk, its metadata, and loading it."""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict, Iterable, List, Optional

from determined.errors import CheckpointError
from determined.storage import METADATA_FILE, read_metadata, write_metadata

__all__ = ["Checkpoint"]


class Checkpoint:
    """A checkpoint directory and its ``metadata.json`` (SPEC 5.4).

    Example:
        >>> ckpt = Checkpoint.from_path("~/.determined/local/checkpoints/<uuid>")  # doctest: +SKIP
        >>> model = ckpt.load()                                                     # doctest: +SKIP
    """

    def __init__(self, path: str, metadata: Dict[str, Any]):
        self.path = path
        self._meta = metadata
        self.uuid: str = metadata.get("uuid", os.path.basename(path.rstrip("/")))
        self.experiment_config: Dict[str, Any] = metadata.get("experiment_config", {})
        self.experiment_id: int = metadata.get("experiment_id", 0)
        self.trial_id: int = metadata.get("trial_id", 0)
        self.hparams: Dict[str, Any] = metadata.get("hparams", {})
        self.batch_number: int = metadata.get("batch_number", 0)
        self.start_time = metadata.get("start_time")
        self.end_time = metadata.get("end_time")
        self.validation = metadata.get("validation_metrics")
        self.framework: str = metadata.get("framework", "")
        self.format: str = metadata.get("format", "")
        self.determined_version: str = metadata.get("determined_version", "")
        self.metadata: Dict[str, Any] = metadata.get("metadata", {})
        self.resources: Dict[str, int] = _resources(path)

    @classmethod
    def from_path(cls, path: str) -> "Checkpoint":
        path = os.path.abspath(os.path.expanduser(path))
        return cls(path, read_metadata(path))

    def download(self, path: Optional[str] = None) -> str:
        """Copy the checkpoint to ``path`` (default ``checkpoints/<uuid>``); return it.

        A master's checkpoint is read straight from its storage when this machine
        can, else streamed by the master (``DET_CHECKPOINT_SOURCE`` forces one way).
        """
        dest = os.path.abspath(path or os.path.join("checkpoints", self.uuid))
        client = getattr(self, "_master_client", None)
        if client is not None and os.path.abspath(self.path) != dest:
            from determined.experimental._checkpoint_fetch import fetch_checkpoint

            storage = self.experiment_config.get("checkpoint_storage") or {}
            return fetch_checkpoint(client, storage, self.uuid, dest)
        if os.path.abspath(self.path) != dest:
            if os.path.exists(dest):
                shutil.rmtree(dest)
            shutil.copytree(self.path, dest)
        return dest

    def load(self, path: Optional[str] = None, tags: Optional[List[str]] = None, **kwargs: Any) -> Any:
        """Load the trained model (downloading to ``path`` first if given, or if the
        checkpoint is not on this machine)."""
        local = self.download(path) if path or not os.path.isdir(self.path) else self.path
        return Checkpoint.load_from_path(local, tags, **kwargs)

    @staticmethod
    def load_from_path(path: str, tags: Optional[List[str]] = None, **kwargs: Any) -> Any:
        """Load a checkpoint directory by its framework.

        PyTorch: the trial instance (models in ``trial.context.models``); tf.keras: the
        model; Estimator/SavedModel: the loaded SavedModel (tags default ``["serve"]``).
        """
        meta = read_metadata(path)
        framework = meta.get("framework", "")
        if framework.startswith("torch"):
            from determined.pytorch import load_trial_from_checkpoint_path

            return load_trial_from_checkpoint_path(path, **kwargs)
        if meta.get("format") == "h5" or framework.startswith("tensorflow") and os.path.exists(
            os.path.join(path, "determined-keras-model.h5")
        ):
            from determined.keras import load_model_from_checkpoint_path

            return load_model_from_checkpoint_path(path, **kwargs)
        if meta.get("format") == "tf_checkpoint":
            raise CheckpointError(
                f"{path} is a low-level TensorFlowTrial checkpoint (TF checkpoint files); "
                "restore it with tf.compat.v1.train.Saver in the graph your build_graph makes"
            )
        if meta.get("format") == "saved_model" or framework.startswith("tensorflow"):
            from determined.estimator import load_estimator_from_checkpoint_path

            return load_estimator_from_checkpoint_path(path, tags=tags, **kwargs)
        raise CheckpointError(f"{path}: unknown checkpoint framework {framework!r}")

    def add_metadata(self, metadata: Dict[str, Any]) -> None:
        """Merge ``metadata`` into the user metadata (top-level keys replaced): stored by
        the master for a checkpoint of a master, else in ``metadata.json``."""
        if not isinstance(metadata, dict):
            raise ValueError(f"Expected metadata to be a dict. Received: metadata={metadata!r}")
        client = getattr(self, "_master_client", None)
        if client is not None:
            self.metadata = client.request("POST", f"/checkpoints/{self.uuid}/metadata",
                                           json={"metadata": metadata})["metadata"]
            return
        self.metadata.update(metadata)
        self._write()

    def remove_metadata(self, keys: Iterable[str]) -> None:
        """Drop top-level ``keys`` from the user metadata (where :meth:`add_metadata`
        stores it)."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        client = getattr(self, "_master_client", None)
        if client is not None:
            if keys:
                self.metadata = client.request("DELETE", f"/checkpoints/{self.uuid}/metadata",
                                               params={"keys": keys})["metadata"]
            return
        for key in keys:
            self.metadata.pop(key, None)
        self._write()

    def _write(self) -> None:
        self._meta["metadata"] = self.metadata
        write_metadata(self.path, self._meta)

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id}, batch_number={self.batch_number})"


def _resources(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if name != METADATA_FILE:
                out[os.path.relpath(full, path)] = os.path.getsize(full)
    return out
