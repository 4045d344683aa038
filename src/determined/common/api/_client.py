"""A small typed client for the master's REST API (``/api/v1``).

Errors: an unreachable master or a non-2xx answer raises
:class:`determined.errors.MasterError` with the master's message; the HTTP status
is in ``.status`` (None when unreachable).

Creating an experiment is safe to retry: each create sends one random
``Idempotency-Key``, and a connection lost before the answer came is retried with the
same key (:data:`CREATE_RETRY_DELAYS`); the master answers a key it stored with the
experiment it made then. Only a master whose ``GET /master`` says ``idempotent_create``
is retried: an older one ignores the key, and a retry could make a second experiment.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Protocol, Union

import httpx

from determined.errors import MasterError

__all__ = ["CREATE_RETRY_DELAYS", "IDEMPOTENCY_HEADER", "MasterClient", "normalize_master_url",
           "APIError", "TokenSource", "user_path"]

#: The header naming one create; its retries send the same value.
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Seconds before each retry of a create whose connection failed or dropped: about 30 s
#: in all, long enough for a master killed while it answered to be started again.
CREATE_RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
#: The end of a create's error when its answer never came.
_MAY_EXIST = ("The master may have stored the experiment before the connection was lost: "
              "look for it with `det experiment list` before creating it again")


def user_path(name: str) -> str:
    """A user's route, the name quoted (a '?' or '#' in it is part of the name)."""
    from urllib.parse import quote

    return f"/users/{quote(name, safe='')}"


class TokenSource(Protocol):
    """Where a client gets a user's bearer token (an ``Authenticator``)."""

    username: str

    def token(self, refresh: bool = False) -> str:
        """A valid token; ``refresh``: the last one was refused, log in again."""


class APIError(MasterError):
    """``status``: the master's HTTP status, None when no answer came; then ``connected``
    says whether a connection was made (the request may have reached the master)."""

    def __init__(self, message: str, status: Optional[int] = None,
                 details: Optional[List[Dict[str, Any]]] = None, connected: bool = True):
        super().__init__(message)
        self.status = status
        self.details = details or []
        self.connected = connected


def normalize_master_url(master: str) -> str:
    """``localhost:8080`` -> ``http://localhost:8080``.

    Raises:
        MasterError: not ``host[:port]`` or an ``http(s)://`` URL without a path (named in
            the message).
    """
    from urllib.parse import urlsplit

    given = master
    master = str(master).strip().rstrip("/")
    if "://" not in master:
        master = "http://" + master
    try:
        parts = urlsplit(master)
        port = parts.port  # raises ValueError for a port that is not a number 0-65535
        ok = (parts.scheme in ("http", "https") and bool(parts.hostname)
              and not any(c.isspace() for c in master) and port != 0)
    except ValueError:
        ok = False
    if not ok:
        raise MasterError(f"Invalid master address {given!r}: expected host:port or "
                          "http(s)://host:port (-m/--master or $DET_MASTER)")
    if parts.path or parts.query or parts.fragment:  # e.g. a web UI page's URL
        root = f"{parts.scheme}://{parts.netloc}"
        raise MasterError(f"Invalid master address {given!r}: the master answers at the root "
                          f"of its address, without a path; use {root} (-m/--master or "
                          "$DET_MASTER)")
    return master


class MasterClient:
    """Talk to a master.

    Args:
        master: ``host:port`` or a URL.
        token: a bearer token (a trial runner's per-trial token).
        auth: logs in as a user when the first request needs a token, and again
            once if the master answers 401 (an expired session).
        transport: an ``httpx`` transport (tests pass ``httpx.MockTransport``).

    Example:
        >>> client = MasterClient("localhost:8080")
        >>> client.get_master()["version"]
        '0.13.0'
    """

    def __init__(self, master: str, token: Optional[str] = None,
                 transport: Optional[httpx.BaseTransport] = None, timeout: float = 60.0,
                 auth: Optional[TokenSource] = None):
        self.url = normalize_master_url(master)
        self._auth = auth
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # Plain HTTP needs no TLS context; building one loads the CA bundle (~50 ms),
        # which every trial process would pay at start.
        plain = self.url.startswith("http://")
        self._http = httpx.Client(base_url=self.url + "/api/v1", headers=headers,
                                  transport=transport, timeout=timeout,
                                  verify=False if plain else True)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "MasterClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def username(self) -> Optional[str]:
        """The user this client logs in as (None without ``auth``)."""
        return self._auth.username if self._auth is not None else None

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request; a GET follows redirects (httpx drops the token on the way to
        another host), other methods do not: their redirect is an error (``_raise_for``)."""
        try:
            return self._http.request(method, path, follow_redirects=method == "GET",
                                      **kwargs)
        except httpx.TooManyRedirects as e:
            raise APIError(f"the master at {self.url} redirected {method} {path} too many "
                           f"times ({e}); is {self.url} the master's address?") from None
        except httpx.TransportError as e:
            raise APIError(f"no master is reachable at {self.url}: {e}",
                           connected=not isinstance(e, httpx.ConnectError)) from None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if self._auth is not None and "Authorization" not in self._http.headers:
            self._http.headers["Authorization"] = f"Bearer {self._auth.token()}"
        r = self._send(method, path, **kwargs)
        if r.status_code == 401 and self._auth is not None:
            self._http.headers["Authorization"] = f"Bearer {self._auth.token(refresh=True)}"
            r = self._send(method, path, **kwargs)
        self._raise_for(r)
        if not r.content:
            return None
        return r.json()

    @contextlib.contextmanager
    def stream(self, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        """GET ``path`` without reading its body (read it with ``iter_bytes()``);
        errors as :meth:`request`."""
        if self._auth is not None and "Authorization" not in self._http.headers:
            self._http.headers["Authorization"] = f"Bearer {self._auth.token()}"
        for attempt in (0, 1):
            try:
                with self._http.stream("GET", path, follow_redirects=True, **kwargs) as r:
                    if r.status_code == 401 and self._auth is not None and attempt == 0:
                        self._http.headers["Authorization"] = (
                            f"Bearer {self._auth.token(refresh=True)}")
                        continue
                    if r.status_code >= 300:
                        r.read()
                        self._raise_for(r)
                    yield r
                    return
            except httpx.TransportError as e:
                raise APIError(f"no master is reachable at {self.url}: {e}") from None

    @staticmethod
    def _raise_for(r: httpx.Response) -> None:
        if 300 <= r.status_code < 400:  # never a success body (a GET's was followed)
            method, where = r.request.method, r.headers.get("location")
            why = (f"to {where}; a {method} is not sent on to another address"
                   if where else "without a Location to follow")
            raise APIError(
                f"{method} {r.request.url} was answered with a redirect (HTTP "
                f"{r.status_code}) {why}. Give the master's own address (-m/--master or "
                "$DET_MASTER)", r.status_code)
        if r.status_code >= 400:
            try:
                body = r.json()
                message, details = body.get("error") or r.text, body.get("details")
            except ValueError:
                message, details = r.text, None
            for d in details or []:  # unless the message lists them already
                field = d.get("field")
                line = f"{field}: {d.get('message')}" if field else str(d.get("message"))
                if line not in message:
                    message += f"\n  - {line}"
            # The status goes with the message's first line, not after its last bullet.
            first, sep, rest = message.partition("\n")
            colon = ":" if first.endswith(":") else ""
            first = f"{first[:len(first) - len(colon)]} (HTTP {r.status_code}){colon}"
            raise APIError(first + sep + rest, r.status_code, details)

    # -- cluster ---------------------------------------------------------------------
    def get_master(self) -> Dict[str, Any]:
        return self.request("GET", "/master")

    def get_master_config(self) -> Dict[str, Any]:
        return self.request("GET", "/master/config")

    # -- users and sessions ------------------------------------------------------------
    def login(self, username: str, password: str) -> Dict[str, Any]:
        """``{"token": ..., "user": {...}}``; raises APIError (401) for a refused login."""
        return self.request("POST", "/auth/login",
                            json={"username": username, "password": password})

    def logout(self) -> bool:
        return bool(self.request("POST", "/auth/logout")["logged_out"])

    def me(self) -> Dict[str, Any]:
        return self.request("GET", "/me")

    def list_users(self) -> List[Dict[str, Any]]:
        return self.request("GET", "/users")["users"]

    def create_user(self, username: str, admin: bool = False, password: str = "") -> Dict[str, Any]:
        return self.request("POST", "/users",
                            json={"username": username, "admin": admin, "password": password})

    def patch_user(self, name: str, /, **changes: Any) -> Dict[str, Any]:
        """Change ``active``, ``admin``, ``username`` (rename) or ``agent_user_group`` of
        user ``name`` (admins)."""
        return self.request("PATCH", user_path(name), json=changes)

    def set_password(self, username: str, password: str) -> None:
        self.request("POST", user_path(username) + "/password", json={"password": password})

    # -- experiments -------------------------------------------------------------------
    def create_experiment(self, config: Union[str, Dict[str, Any]], model_def: bytes,
                          activate: bool = True, git: Optional[Dict[str, str]] = None) -> int:
        """Create an experiment; ``git``: where the model definition came from
        (``{git_remote, git_commit, git_committer, git_commit_date}``)."""
        body: Dict[str, Any] = {"config": config, "activate": activate,
                                "model_def": base64.b64encode(model_def).decode("ascii")}
        if git is not None:
            body["git"] = git
        headers = {IDEMPOTENCY_HEADER: uuid.uuid4().hex}
        honoured: Optional[bool] = None  # whether the master says it honours the key
        last: Optional[APIError] = None
        for retry, delay in enumerate((0.0, *CREATE_RETRY_DELAYS)):
            if retry:
                assert last is not None
                time.sleep(delay)
                if not honoured:  # asked before any retry: a master from before ignores it
                    honoured = self._honours_create_key()
                    if honoured is False:
                        raise APIError(
                            f"{last}. Not retried: the master at {self.url} ignores the "
                            f"{IDEMPOTENCY_HEADER} header (it is older than this client), "
                            f"so another try could create a second experiment. {_MAY_EXIST}",
                            connected=True) from last
                if retry == 1:
                    print(f"No answer to creating the experiment ({last}); retrying for up "
                          f"to {sum(CREATE_RETRY_DELAYS):.0f} s with the same idempotency "
                          "key (no duplicate is made)", file=sys.stderr)
                if not honoured:
                    continue  # still no master: asked again after the next delay
            try:
                return int(self.request("POST", "/experiments", json=body,
                                        headers=headers)["id"])
            except APIError as e:
                # Retried: a connection that failed after it was made (the master may
                # have stored it), then any failure while it comes back. Not: an
                # answer (4xx, 5xx), or no master there at the first try.
                if e.status is not None or (retry == 0 and not e.connected):
                    raise
                last = e
        raise APIError(
            f"{last} (after {len(CREATE_RETRY_DELAYS)} retries over "
            f"{sum(CREATE_RETRY_DELAYS):.0f} s). {_MAY_EXIST}", connected=True) from last

    def _honours_create_key(self) -> Optional[bool]:
        """Whether the master says it answers a repeated create's key with the experiment
        it made (``idempotent_create`` in ``GET /master``); None while it does not answer."""
        try:
            return bool(self.get_master().get("idempotent_create"))
        except APIError:
            return None

    def list_experiments(self, archived: bool = False,
                         user: Optional[str] = None) -> List[Dict[str, Any]]:
        """Experiments (archived ones too if ``archived``); only ``user``'s if given."""
        params: Dict[str, Any] = {"archived": archived}
        if user is not None:
            params["user"] = user
        return self.request("GET", "/experiments", params=params)["experiments"]

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
