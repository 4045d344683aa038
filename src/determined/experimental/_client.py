"""The Python SDK: experiments, trials and checkpoints of a master (SPEC 5.4).

Example:
    >>> from determined.experimental import Determined                  # doctest: +SKIP
    >>> d = Determined("localhost:8080")                                 # doctest: +SKIP
    >>> trial = d.get_experiment(1).top_checkpoint().load()              # doctest: +SKIP
    >>> model = trial.context.models[0]                                  # doctest: +SKIP
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional

from determined._metric_order import ranked_checkpoints
from determined.errors import CheckpointError
from determined.experimental._checkpoint import Checkpoint
from determined.experimental._model import Model, ModelOrderBy, ModelSortBy

__all__ = ["Determined", "ExperimentReference", "TrialReference", "as_determined",
           "validation_metrics"]

_TERMINAL = ("COMPLETED", "CANCELED", "ERROR")


def _default_master() -> str:
    return os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"


class Determined:
    """A client of the master at ``master`` (default ``$DET_MASTER`` or localhost:8080).

    Requests are made as ``user``: its cached session token (``det user login``) or, with
    none cached, a login with the blank password. Default: the last user logged in to
    that master, else ``determined``.
    """

    def __init__(self, master: Optional[str] = None, user: Optional[str] = None):
        from determined.common.api import Authenticator, MasterClient

        url = master or _default_master()
        self._client = MasterClient(url, auth=Authenticator(url, user=user))
        #: The user requests are made as.
        self.user: str = self._client.username or ""

    @classmethod
    def local(cls, local_dir: Optional[str] = None) -> "Determined":
        """Read experiments run with ``--local`` (records in ``local_dir``, default
        ``$DET_LOCAL_DIR`` or ``~/.determined/local``) with the same calls."""
        from determined.local._client import LocalClient

        det = cls.__new__(cls)
        det._client = LocalClient(local_dir)  # type: ignore[assignment]
        det.user = ""
        return det

    def get_experiment(self, experiment_id: int) -> "ExperimentReference":
        self._client.get_experiment(experiment_id)  # 404s clearly for unknown ids
        return ExperimentReference(experiment_id, self)

    def get_trial(self, trial_id: int) -> "TrialReference":
        info = self._client.get_trial(trial_id)
        return TrialReference(trial_id, self, experiment_id=info["experiment_id"])

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        return self._checkpoint(self._client.get_checkpoint(uuid))

    def create_experiment(self, config: Any, model_dir: str, activate: bool = True) -> "ExperimentReference":
        """Submit ``model_dir`` (``.detignore`` honoured) with ``config`` (YAML text or dict)."""
        from determined.common.api import pack_context

        exp_id = self._client.create_experiment(config, pack_context(model_dir), activate)
        return ExperimentReference(exp_id, self)

    # ---- the model registry

    def create_model(self, name: str, description: Optional[str] = "",
                     metadata: Optional[Dict[str, Any]] = None) -> Model:
        """Add a model named ``name`` to the registry (409 if the name is taken)."""
        from urllib.parse import quote

        data = self._client.request("POST", f"/models/{quote(name, safe='')}",
                                    json={"description": description or "",
                                          "metadata": metadata or {}})
        return Model.from_json(data, self)

    def get_model(self, name: str) -> Model:
        """The registry's model ``name``."""
        from urllib.parse import quote

        return Model.from_json(self._client.request("GET", f"/models/{quote(name, safe='')}"),
                               self)

    def get_models(self, sort_by: ModelSortBy = ModelSortBy.NAME,
                   order_by: ModelOrderBy = ModelOrderBy.ASCENDING, name: str = "",
                   description: str = "") -> List[Model]:
        """Models whose name and description contain ``name`` and ``description``,
        sorted by ``sort_by``."""
        params = {"sort_by": ModelSortBy(sort_by)._api(),
                  "order_by": ModelOrderBy(order_by)._api(),
                  "name": name or "", "description": description or ""}
        data = self._client.request("GET", "/models", params=params)
        return [Model.from_json(m, self) for m in data["models"]]

    def _version_checkpoint(self, data: Dict[str, Any]) -> Checkpoint:
        """The checkpoint of a model version JSON, with ``model_version``/``model_name``."""
        return self._checkpoint({**data["checkpoint"], "model_version": data["version"],
                                 "model_name": data["model"]["name"]})

    # ---- helpers shared by the references

    def _config(self, experiment_id: int) -> Dict[str, Any]:
        return self._client.get_experiment(experiment_id)["config"]

    def _checkpoint(self, data: Dict[str, Any]) -> Checkpoint:
        """A :class:`Checkpoint` from the master's checkpoint JSON, completed with the
        experiment's config and the trial's hyperparameters (as upstream's master
        returned them)."""
        data = dict(data)
        if not data.get("experiment_config"):
            data["experiment_config"] = self._config(data["experiment_id"])
        if "hparams" not in data:
            data["hparams"] = self._client.get_trial(data["trial_id"]).get("hparams") or {}
        data.setdefault("batch_number", data.get("total_batches"))
        return Checkpoint.from_json(data, master=self)

    def _select(self, checkpoints: List[Dict[str, Any]], experiment_id: int,
                sort_by: Optional[str], smaller_is_better: Optional[bool]) -> List[Dict[str, Any]]:
        """COMPLETED checkpoints with the metric, best first."""
        searcher = self._config(experiment_id)["searcher"]
        metric = sort_by or searcher["metric"]
        smaller = (searcher.get("smaller_is_better", True) if smaller_is_better is None
                   else smaller_is_better)
        return ranked_checkpoints(checkpoints, metric, smaller)


def as_determined(master: Any) -> Determined:
    """``master`` as a client: a :class:`Determined` as it is, else the master's URL
    (None: ``$DET_MASTER`` or localhost:8080)."""
    if isinstance(master, Determined):
        return master
    if master is not None and not isinstance(master, str):
        raise TypeError(f"Expected master to be the master's URL (a str) or a Determined "
                        f"client. Received: {master!r}")
    return Determined(master)


def validation_metrics(ckpt: Checkpoint) -> Dict[str, Any]:
    """The flat validation metrics of a checkpoint (``{}`` if none)."""
    value = ckpt.validation or {}
    if isinstance(value.get("metrics"), dict) and "validationMetrics" in value["metrics"]:
        return dict(value["metrics"]["validationMetrics"] or {})
    return dict(value)


class ExperimentReference:
    """Experiment ``experiment_id`` of the master at ``master`` (its URL, or a
    :class:`Determined` client)."""

    def __init__(self, experiment_id: int, master: Any = None):
        self.id = experiment_id
        self._det = as_determined(master)
        self._master = self._det._client.url

    def __repr__(self) -> str:
        return f"ExperimentReference(id={self.id}, master={self._master!r})"

    def _action(self, action: str) -> None:
        self._det._client.experiment_action(self.id, action)

    def activate(self) -> None:
        self._action("activate")

    def pause(self) -> None:
        self._action("pause")

    def cancel(self) -> None:
        self._action("cancel")

    def kill(self) -> None:
        self._action("kill")

    def state(self) -> str:
        return self._det._client.get_experiment(self.id)["state"]

    def wait(self, interval: float = 1.0, timeout: Optional[float] = None) -> str:
        """Block until the experiment ends; return its final state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            state = self.state()
            if state in _TERMINAL:
                return state
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"experiment {self.id} still {state} after {timeout} s")
            time.sleep(interval)

    def get_trials(self) -> List["TrialReference"]:
        return [TrialReference(t["id"], self._det, experiment_id=self.id)
                for t in self._det._client.list_trials(self.id)]

    def top_checkpoint(self, sort_by: Optional[str] = None,
                       smaller_is_better: Optional[bool] = None) -> Checkpoint:
        """The best validated checkpoint of the experiment."""
        best = self.top_n_checkpoints(1, sort_by, smaller_is_better)
        if not best:
            raise CheckpointError(self.no_checkpoint_reason(sort_by))
        return best[0]

    def no_checkpoint_reason(self, sort_by: Optional[str] = None) -> str:
        """Why :meth:`top_n_checkpoints` found none: no validated checkpoint, or none
        validated on ``sort_by`` (the metrics its checkpoints have named)."""
        metrics = sorted({name for c in self._det._client.list_checkpoints(self.id)
                          if c["state"] == "COMPLETED"
                          for name in (c.get("validation") or {})})
        if sort_by and metrics and sort_by not in metrics:
            return (f"experiment {self.id} has no checkpoint validated on {sort_by!r} "
                    f"(its checkpoints' metrics: {', '.join(metrics)})")
        return f"experiment {self.id} has no validated checkpoint"

    def top_n_checkpoints(self, limit: int, sort_by: Optional[str] = None,
                          smaller_is_better: Optional[bool] = None) -> List[Checkpoint]:
        """The best checkpoint of each of the ``limit`` best trials, best first."""
        ranked = self._det._select(self._det._client.list_checkpoints(self.id), self.id,
                                   sort_by, smaller_is_better)
        seen, out = set(), []
        for c in ranked:
            if c["trial_id"] not in seen:
                seen.add(c["trial_id"])
                out.append(self._det._checkpoint(c))
            if len(out) == limit:
                break
        return out


class TrialReference:
    """Trial ``trial_id`` of the master at ``master`` (its URL, or a :class:`Determined`
    client). ``experiment_id`` saves asking the master for the trial's experiment."""

    def __init__(self, trial_id: int, master: Any = None, *,
                 experiment_id: Optional[int] = None):
        self.id = trial_id
        self._det = as_determined(master)
        self._master = self._det._client.url
        self._experiment_id = experiment_id

    def __repr__(self) -> str:
        return f"TrialReference(id={self.id}, master={self._master!r})"

    @property
    def experiment_id(self) -> int:
        """The trial's experiment (asked of the master once)."""
        if self._experiment_id is None:
            self._experiment_id = int(self._det._client.get_trial(self.id)["experiment_id"])
        return self._experiment_id

    def get_workloads(self) -> List[Dict[str, Any]]:
        """Every stored workload of the trial, oldest first: ``{"kind": "training" |
        "validation", "total_batches", "end_time", "metrics", "batch_metrics" (per-batch
        training metrics), "num_inputs"}``."""
        return self._det._client.request("GET", f"/trials/{self.id}/workloads")["workloads"]

    def _checkpoints(self) -> List[Dict[str, Any]]:
        return [c for c in self._det._client.list_checkpoints(self.experiment_id)
                if c["trial_id"] == self.id]

    def top_checkpoint(self, sort_by: Optional[str] = None,
                       smaller_is_better: Optional[bool] = None) -> Checkpoint:
        return self.select_checkpoint(best=True, sort_by=sort_by, smaller_is_better=smaller_is_better)

    def select_checkpoint(self, latest: bool = False, best: bool = False, uuid: Optional[str] = None,
                          sort_by: Optional[str] = None,
                          smaller_is_better: Optional[bool] = None) -> Checkpoint:
        """Exactly one of ``latest``, ``best`` or ``uuid``; sort arguments only with ``best``."""
        if sum([bool(latest), bool(best), uuid is not None]) != 1:
            raise ValueError("Expected exactly one of latest=True, best=True or uuid=...")
        if (sort_by is not None or smaller_is_better is not None) and not best:
            raise ValueError("sort_by and smaller_is_better apply only with best=True")
        if uuid is not None:
            return self._det.get_checkpoint(uuid)
        checkpoints = [c for c in self._checkpoints() if c["state"] == "COMPLETED"]
        if latest:
            if not checkpoints:
                raise CheckpointError(f"trial {self.id} has no checkpoint")
            return self._det._checkpoint(max(checkpoints, key=lambda c: c["total_batches"]))
        ranked = self._det._select(checkpoints, self.experiment_id, sort_by, smaller_is_better)
        if not ranked:
            raise CheckpointError(f"trial {self.id} has no validated checkpoint")
        return self._det._checkpoint(ranked[0])
