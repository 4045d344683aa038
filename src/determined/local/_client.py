"""Read local experiments as a master's client would: :class:`LocalClient` answers the
read calls of :class:`~determined.common.api.MasterClient` from the local directory's
database with the master's own JSON (``determined.master.views``), so ``det ...
--local`` commands and ``Determined.local()`` share every line of formatting with their
master counterparts."""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from determined.common.api import APIError, MasterClient
from determined.errors import MasterError

__all__ = ["LocalClient"]


class LocalClient:
    """The read-only surface of ``MasterClient`` over ``local_dir``'s records.

    Args:
        local_dir: the local directory (default ``$DET_LOCAL_DIR`` or
            ``~/.determined/local``).

    Unknown ids raise :class:`APIError` with status 404, as a master answers; calls that
    change something raise :class:`MasterError` (local runs are changed by running).
    """

    username: Optional[str] = None

    def __init__(self, local_dir: Optional[str] = None):
        from determined.local._store import default_local_dir

        self.local_dir = os.path.abspath(os.path.expanduser(local_dir or default_local_dir()))
        self.url = self.local_dir
        self._store: Any = None
        views = self._views
        self._routes: List[Tuple[str, "re.Pattern[str]", Callable[..., Any]]] = [
            ("GET", re.compile(r"/experiments"), self._experiments),
            ("GET", re.compile(r"/experiments/(\d+)"),
             lambda i, **_: views().experiment_json(self._db(), int(i))),
            ("GET", re.compile(r"/experiments/(\d+)/trials"), self._trials),
            ("GET", re.compile(r"/experiments/(\d+)/checkpoints"), self._checkpoints),
            ("GET", re.compile(r"/experiments/(\d+)/model_def"),
             lambda i, **_: views().model_def_json(self._db(), int(i))),
            ("GET", re.compile(r"/trials/(\d+)"),
             lambda i, **_: views().trial_with_metrics_json(self._db(), int(i))),
            ("GET", re.compile(r"/trials/(\d+)/workloads"),
             lambda i, **_: views().workloads_json(self._db(), int(i))),
            ("GET", re.compile(r"/trials/(\d+)/logs"), self._logs),
            ("GET", re.compile(r"/checkpoints/([^/]+)"),
             lambda u, **_: views().checkpoint_json(self._db().get_checkpoint(u))),
            ("POST", re.compile(r"/checkpoints/([^/]+)/metadata"), self._add_metadata),
            ("DELETE", re.compile(r"/checkpoints/([^/]+)/metadata"), self._remove_metadata),
        ]

    # -- plumbing -------------------------------------------------------------------------

    @staticmethod
    def _views() -> Any:
        from determined.master import views

        return views

    def _db(self) -> Any:
        if self._store is None:
            from determined.local._store import db_path, open_store

            if not os.path.exists(db_path(self.local_dir)) and not os.path.isdir(
                    os.path.join(self.local_dir, "experiments")):
                raise APIError(f"no local experiments in {self.local_dir} (run one with "
                               "`det experiment create CONFIG DIR --local`, or pass "
                               "--local-dir)", 404)
            self._store = open_store(self.local_dir)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> "LocalClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, method: str, path: str, params: Optional[Dict[str, Any]] = None,
                json: Optional[Dict[str, Any]] = None, **_: Any) -> Any:
        """What the master answers to ``method path`` (the read routes, and checkpoint
        metadata), from the local records."""
        from determined.master.db import NotFoundError

        for verb, pattern, handler in self._routes:
            match = pattern.fullmatch(path.split("?")[0])
            if verb == method and match:
                try:
                    return handler(*match.groups(), params=params or {}, json=json)
                except NotFoundError as e:
                    # No "(HTTP 404)": no HTTP took place.
                    raise APIError(f"{e} in the local records of {self.local_dir}",
                                   404) from None
        raise MasterError(f"{method} {path} needs a master: local experiments can only be "
                          "read (without --local, commands go to the master at -m/$DET_MASTER)")

    # -- routes -------------------------------------------------------------------------

    def _experiments(self, **_: Any) -> Dict[str, Any]:
        from determined.local._store import db_path

        if not os.path.exists(db_path(self.local_dir)) and not os.path.isdir(
                os.path.join(self.local_dir, "experiments")):
            return {"experiments": []}
        return {"experiments": self._views().experiments_json(self._db(), archived=True)}

    def _trials(self, exp_id: str, **_: Any) -> Dict[str, Any]:
        self._db().get_experiment(int(exp_id))
        return {"trials": [self._views().trial_json(t) for t in self._db().list_trials(int(exp_id))]}

    def _checkpoints(self, exp_id: str, **_: Any) -> Dict[str, Any]:
        self._db().get_experiment(int(exp_id))
        return {"checkpoints": [self._views().checkpoint_json(c)
                                for c in self._db().list_checkpoints(experiment_id=int(exp_id))]}

    def _logs(self, trial_id: str, params: Dict[str, Any], **_: Any) -> Dict[str, Any]:
        after_id, limit = params.get("after_id", 0), params.get("limit", 1000)
        tail = params.get("tail")
        return self._views().logs_json(self._db(), int(trial_id), int(after_id), int(limit),
                                       None if tail is None else int(tail))

    def _add_metadata(self, uuid: str, json: Any, **_: Any) -> Dict[str, Any]:
        return {"metadata": self._db().add_checkpoint_metadata(uuid, (json or {})["metadata"])}

    def _remove_metadata(self, uuid: str, params: Dict[str, Any], **_: Any) -> Dict[str, Any]:
        return {"metadata": self._db().remove_checkpoint_metadata(uuid, params.get("keys") or [])}

    # -- MasterClient's read methods: the same requests, answered by request() above ---

    list_experiments = MasterClient.list_experiments
    get_experiment = MasterClient.get_experiment
    list_trials = MasterClient.list_trials
    list_checkpoints = MasterClient.list_checkpoints
    get_trial = MasterClient.get_trial
    get_trial_logs = MasterClient.get_trial_logs
    get_checkpoint = MasterClient.get_checkpoint

    def stream(self, path: str, **kwargs: Any) -> Iterator[Any]:
        raise APIError(f"{path}: a local checkpoint is read from its storage; it is not "
                       "there (DET_CHECKPOINT_SOURCE=master needs a master)", 404)

    def __getattr__(self, name: str) -> Any:
        if name in ("create_experiment", "experiment_action", "patch_experiment", "login",
                    "logout", "me", "list_users", "create_user", "patch_user", "set_password",
                    "get_master", "get_master_config"):
            def refuse(*args: Any, **kwargs: Any) -> Any:
                raise MasterError(f"{name.replace('_', ' ')} needs a master: local "
                                  "experiments can only be read")
            return refuse
        raise AttributeError(name)
