"""A small typed client for the master's REST API (``/api/v1``).

Errors: an unreachable master or a non-2xx answer raises
:class:`determined.errors.MasterError` with the master's message; the HTTP status
is in ``.status`` (None when unreachable).
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional, Union

import httpx

from determined.errors import MasterError

__all__ = ["MasterClient", "normalize_master_url", "APIError"]


class APIError(MasterError):
    def __init__(self, message: str, status: Optional[int] = None,
                 details: Optional[List[Dict[str, Any]]] = None):
        super().__init__(message)
        self.status = status
        self.details = details or []


def normalize_master_url(master: str) -> str:
    """``localhost:8080`` -> ``http://localhost:8080``."""
    master = master.strip().rstrip("/")
    if "://" not in master:
        master = "http://" + master
    return master


class MasterClient:
    """Talk to a master.

    Args:
        master: ``host:port`` or a URL.
        token: a bearer token (a trial runner's per-trial token).
        transport: an ``httpx`` transport (tests pass ``httpx.MockTransport``).

    Example:
        >>> client = MasterClient("localhost:8080")
        >>> client.get_master()["version"]
        '0.13.0'
    """

    def __init__(self, master: str, token: Optional[str] = None,
                 transport: Optional[httpx.BaseTransport] = None, timeout: float = 60.0):
        self.url = normalize_master_url(master)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url + "/api/v1", headers=headers,
                                  transport=transport, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "MasterClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            r = self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise APIError(f"no master is reachable at {self.url}: {e}") from None
        if r.status_code >= 400:
            try:
                body = r.json()
                message, details = body.get("error") or r.text, body.get("details")
            except ValueError:
                message, details = r.text, None
            if details:
                message += "".join(f"\n  - {d.get('field') or '<root>'}: {d.get('message')}"
                                   for d in details)
            raise APIError(f"{message} (HTTP {r.status_code})", r.status_code, details)
        if not r.content:
            return None
        return r.json()

    # -- cluster ---------------------------------------------------------------------
    def get_master(self) -> Dict[str, Any]:
        return self.request("GET", "/master")

    def get_master_config(self) -> Dict[str, Any]:
        return self.request("GET", "/master/config")

    # -- experiments -------------------------------------------------------------------
    def create_experiment(self, config: Union[str, Dict[str, Any]], model_def: bytes,
                          activate: bool = True) -> int:
        body = {"config": config, "model_def": base64.b64encode(model_def).decode("ascii"),
                "activate": activate}
        return int(self.request("POST", "/experiments", json=body)["id"])

    def list_experiments(self, archived: bool = False) -> List[Dict[str, Any]]:
        return self.request("GET", "/experiments", params={"archived": archived})["experiments"]

    def get_experiment(self, id: int) -> Dict[str, Any]:
        return self.request("GET", f"/experiments/{id}")

    def experiment_action(self, id: int, action: str) -> Dict[str, Any]:
        return self.request("POST", f"/experiments/{id}/{action}")

    def patch_experiment(self, id: int, **changes: Any) -> Dict[str, Any]:
        return self.request("PATCH", f"/experiments/{id}", json=changes)

    def list_trials(self, experiment_id: int) -> List[Dict[str, Any]]:
        return self.request("GET", f"/experiments/{experiment_id}/trials")["trials"]

    def list_checkpoints(self, experiment_id: int) -> List[Dict[str, Any]]:
        return self.request("GET", f"/experiments/{experiment_id}/checkpoints")["checkpoints"]

    def get_trial(self, id: int) -> Dict[str, Any]:
        return self.request("GET", f"/trials/{id}")

    def get_trial_logs(self, id: int, after_id: int = 0, limit: int = 1000,
                       tail: Optional[int] = None) -> List[Dict[str, Any]]:
        params: Dict[str, Any] = {"after_id": after_id, "limit": limit}
        if tail is not None:
            params["tail"] = tail
        return self.request("GET", f"/trials/{id}/logs", params=params)["logs"]

    def get_checkpoint(self, uuid: str) -> Dict[str, Any]:
        return self.request("GET", f"/checkpoints/{uuid}")

    # -- trial runner (needs the per-trial token) ----------------------------------------
    def runner_post(self, what: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self.request("POST", f"/trial-runner/{what}", json=body) or {}

    def runner_next_op(self) -> Dict[str, Any]:
        return self.request("GET", "/trial-runner/next-op")

    def runner_is_best(self, value: float) -> bool:
        return bool(self.request("GET", "/trial-runner/is-best", params={"value": value})["best"])
