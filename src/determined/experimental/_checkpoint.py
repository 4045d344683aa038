"""Using trained models: a checkpoint of a master or on disk, its metadata, and loading it.

A :class:`Checkpoint` holds the fields the master returns for it (upstream 0.13's
constructor); :meth:`Checkpoint.from_json` builds one from the master's JSON and
:meth:`Checkpoint.from_path` from a checkpoint directory's ``metadata.json``.
"""

from __future__ import annotations

import enum
import os
import pathlib
import shutil
from typing import Any, Dict, Iterable, List, Optional, Union

from determined.errors import CheckpointError
from determined.storage import METADATA_FILE, read_metadata, write_metadata

__all__ = ["Checkpoint", "ModelFramework"]


class ModelFramework(enum.Enum):
    """The framework a checkpoint was written by (:meth:`Checkpoint.get_type`)."""

    PYTORCH = 1
    TENSORFLOW = 2


class Checkpoint:
    """A checkpoint: where it came from, its files and its metadata.

    Get one from the SDK (:meth:`Determined.get_checkpoint`,
    ``ExperimentReference.top_checkpoint``, ...), from :meth:`from_json`, or from a
    directory with :meth:`from_path`.

    Args:
        uuid: the checkpoint's UUID.
        experiment_config: the config of the experiment that wrote it (its
            ``checkpoint_storage`` says where the files are).
        experiment_id, trial_id: the experiment and trial that wrote it.
        hparams: the trial's hyperparameters.
        batch_number: batches the trial had trained when it was written.
        start_time, end_time: when writing it began and ended.
        resources: file path -> size in bytes of every file in it.
        validation: its validation, ``{"metrics": {"validationMetrics": {...}}, "state":
            ...}``, or None.
        determined_version, framework, format: from its ``metadata.json``.
        model_version, model_name: set for a model registry version.
        metadata: user metadata (:meth:`add_metadata`).
        master: the master's URL (or a :class:`Determined` client); None for a
            checkpoint that is only on disk.
        path: where its files are when this machine can read them (keyword only).

    Example:
        >>> ckpt = Checkpoint.from_path("~/.determined/local/checkpoints/<uuid>")  # doctest: +SKIP
        >>> model = ckpt.load()                                                     # doctest: +SKIP
    """

    def __init__(self, uuid: str, experiment_config: Dict[str, Any], experiment_id: int,
                 trial_id: int, hparams: Dict[str, Any], batch_number: int,
                 start_time: Optional[str], end_time: Optional[str],
                 resources: Dict[str, Any], validation: Optional[Dict[str, Any]],
                 determined_version: Optional[str] = None, framework: Optional[str] = None,
                 format: Optional[str] = None, model_version: Optional[int] = None,
                 model_name: Optional[str] = None, metadata: Optional[Dict[str, Any]] = None,
                 master: Any = None, *, path: Optional[str] = None):
        self.uuid = uuid
        self.experiment_config: Dict[str, Any] = dict(experiment_config or {})
        self.experiment_id = experiment_id
        self.trial_id = trial_id
        self.hparams: Dict[str, Any] = dict(hparams or {})
        self.batch_number = batch_number
        self.start_time = start_time
        self.end_time = end_time
        self.resources: Dict[str, Any] = dict(resources or {})
        self.validation = validation
        self.determined_version = determined_version or ""
        self.framework = framework or ""
        self.format = format or ""
        self.model_version = model_version
        self.model_name = model_name
        self.metadata: Dict[str, Any] = dict(metadata or {})
        self._master = master
        #: Where the files are on this machine (or the storage URL), if known.
        self.path = path if path is not None else _storage_path(self.experiment_config, uuid)

    # ---- construction

    @staticmethod
    def from_json(data: Dict[str, Any], master: Any = None) -> "Checkpoint":
        """A checkpoint from the master's JSON (snake_case, or upstream's camelCase).

        ``validation`` may be flat metrics (this master), upstream's ``{"metrics":
        ..., "state": ...}``, or come as upstream's ``metrics``/``validation_state``.
        """
        if "validation" in data:
            validation = _validation(data["validation"])
        elif "metrics" in data or "validation_state" in data:
            validation = {"metrics": data.get("metrics") or {},
                          "state": data.get("validation_state")}
        else:
            validation = None

        def get(snake: str, camel: str, default: Any = None) -> Any:
            return data.get(snake, data.get(camel, default))

        return Checkpoint(
            data["uuid"], get("experiment_config", "experimentConfig", {}),
            get("experiment_id", "experimentId"), get("trial_id", "trialId"),
            data.get("hparams") or {},
            get("batch_number", "batchNumber", data.get("total_batches")),
            get("start_time", "startTime"), get("end_time", "endTime"),
            data.get("resources") or {}, validation,
            determined_version=get("determined_version", "determinedVersion"),
            framework=data.get("framework"), format=data.get("format"),
            model_version=get("model_version", "modelVersion"),
            model_name=get("model_name", "modelName"),
            metadata=data.get("metadata"), master=master, path=data.get("path"),
        )

    @classmethod
    def from_path(cls, path: Union[str, pathlib.Path]) -> "Checkpoint":
        """The checkpoint in directory ``path`` (its ``metadata.json``); its metadata
        edits go to that file."""
        path = os.path.abspath(os.path.expanduser(str(path)))
        meta = read_metadata(path)
        data = {**meta, "uuid": meta.get("uuid", os.path.basename(path.rstrip("/"))),
                "validation": meta.get("validation_metrics"), "resources": _resources(path),
                "path": path}
        data.pop("metrics", None)
        return cls.from_json(data)

    # ---- files

    def download(self, path: Optional[str] = None) -> str:
        """Copy the checkpoint to ``path`` (default ``checkpoints/<uuid>``); return it.

        A master's checkpoint is read straight from its storage when this machine
        can, else streamed by the master (``DET_CHECKPOINT_SOURCE`` forces one way).
        """
        dest = os.path.abspath(path or os.path.join("checkpoints", self.uuid))
        local = self._local_dir()
        if local == dest:
            return dest
        client = self._client()
        if client is None and local is not None:
            if os.path.exists(dest):
                shutil.rmtree(dest)
            shutil.copytree(local, dest)
            return dest
        from determined.experimental._checkpoint_fetch import fetch_checkpoint

        storage = self.experiment_config.get("checkpoint_storage") or {}
        if client is None and not storage:
            raise CheckpointError(
                f"checkpoint {self.uuid}: no master and no checkpoint_storage in its "
                "experiment_config: cannot tell where its files are")
        return fetch_checkpoint(client, storage, self.uuid, dest)

    def load(self, path: Optional[str] = None, tags: Optional[List[str]] = None,
             **kwargs: Any) -> Any:
        """Load the trained model (downloading to ``path`` first if given, or if the
        checkpoint is not on this machine)."""
        local = self._local_dir()
        if path or local is None:
            local = self.download(path)
        return Checkpoint.load_from_path(local, tags, **kwargs)

    @staticmethod
    def load_from_path(path: str, tags: Optional[List[str]] = None, **kwargs: Any) -> Any:
        """Load a checkpoint directory by its framework.

        PyTorch: the trial instance (models in ``trial.context.models``); tf.keras: the
        model; Estimator/SavedModel: the loaded SavedModel (tags default ``["serve"]``).
        """
        path = str(path)
        meta = Checkpoint.parse_metadata(path)
        kind = Checkpoint.get_type(meta)
        if kind is ModelFramework.PYTORCH:
            from determined.pytorch import load_trial_from_checkpoint_path

            return load_trial_from_checkpoint_path(path, **kwargs)
        if meta.get("format") == "h5" or os.path.exists(
            os.path.join(path, "determined-keras-model.h5")
        ):
            from determined.keras import load_model_from_checkpoint_path

            return load_model_from_checkpoint_path(path, **kwargs)
        if meta.get("format") == "tf_checkpoint":
            raise CheckpointError(
                f"{path} is a low-level TensorFlowTrial checkpoint (TF checkpoint files); "
                "restore it with tf.compat.v1.train.Saver in the graph your build_graph makes"
            )
        from determined.estimator import load_estimator_from_checkpoint_path

        return load_estimator_from_checkpoint_path(path, tags=tags, **kwargs)

    @staticmethod
    def parse_metadata(directory: Union[str, pathlib.Path]) -> Dict[str, Any]:
        """The ``metadata.json`` of checkpoint directory ``directory``."""
        return read_metadata(str(directory))

    @staticmethod
    def get_type(metadata: Dict[str, Any]) -> ModelFramework:
        """The framework of a checkpoint from its ``metadata.json`` contents (also the
        older ``torch_version``/``tensorflow_version`` keys)."""
        framework = metadata.get("framework") or ""
        if framework.startswith("torch") or not framework and "torch_version" in metadata:
            return ModelFramework.PYTORCH
        if framework.startswith("tensorflow") or (
                not framework and "tensorflow_version" in metadata):
            return ModelFramework.TENSORFLOW
        if metadata.get("format") in ("h5", "saved_model", "tf_checkpoint"):
            return ModelFramework.TENSORFLOW
        raise CheckpointError(
            f"unknown checkpoint framework {framework!r}: expected metadata.json's "
            "'framework' to start with 'torch' or 'tensorflow'")

    # ---- user metadata

    def add_metadata(self, metadata: Dict[str, Any]) -> None:
        """Merge ``metadata`` into the user metadata (top-level keys replaced): stored by
        the master for a checkpoint of a master, else in ``metadata.json``."""
        if not isinstance(metadata, dict):
            raise ValueError(f"Expected metadata to be a dict. Received: metadata={metadata!r}")
        client = self._client()
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
        client = self._client()
        if client is not None:
            if keys:
                self.metadata = client.request("DELETE", f"/checkpoints/{self.uuid}/metadata",
                                               params={"keys": keys})["metadata"]
            return
        for key in keys:
            self.metadata.pop(key, None)
        self._write()

    # ---- helpers

    def _client(self) -> Any:
        """The master's REST client, or None for a checkpoint only on disk."""
        if self._master is None:
            return None
        if hasattr(self._master, "request"):  # a MasterClient
            return self._master
        from determined.experimental._client import as_determined

        self._master = as_determined(self._master)
        return self._master._client

    def _local_dir(self) -> Optional[str]:
        """The checkpoint's directory if this machine has it."""
        if self.path and os.path.isdir(self.path):
            return os.path.abspath(self.path)
        return None

    def _write(self) -> None:
        local = self._local_dir()
        if local is None:
            raise CheckpointError(
                f"checkpoint {self.uuid}: no master and no local directory to store "
                "its metadata in")
        meta = read_metadata(local)
        meta["metadata"] = self.metadata
        write_metadata(local, meta)

    def __repr__(self) -> str:
        if self.model_name is not None:
            return (f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id}, "
                    f"model={self.model_name!r}, version={self.model_version})")
        return (f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id}, "
                f"batch_number={self.batch_number})")


def _validation(value: Any) -> Optional[Dict[str, Any]]:
    """Flat metrics become upstream's ``{"metrics": {"validationMetrics": ...}, "state"}``."""
    if value is None:
        return None
    if isinstance(value, dict) and "state" in value and "metrics" in value:
        return value
    return {"metrics": {"validationMetrics": value}, "state": "STATE_COMPLETED"}


def _storage_path(experiment_config: Dict[str, Any], uuid: str) -> Optional[str]:
    """Where checkpoint ``uuid`` lives in the experiment's checkpoint storage."""
    storage = experiment_config.get("checkpoint_storage")
    if not storage:
        return None
    if storage.get("type") == "shared_fs":  # no directories made on the way
        return os.path.join(storage.get("host_path") or "", storage.get("storage_path") or "",
                            uuid)
    try:
        from determined.storage import build_storage

        return build_storage(storage).describe(uuid)
    except Exception:  # e.g. an object store whose client library is not installed
        return None


def _resources(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if name != METADATA_FILE:
                out[os.path.relpath(full, path)] = os.path.getsize(full)
    return out
