"""Plain HTTP helpers against a master (upstream 0.13's ``determined_common.api.request``).

``host`` is ``host:port`` or a URL. A ``path`` without a leading ``api/`` is a path of
this master's REST API (``experiments/1`` means ``/api/v1/experiments/1``). Responses
are ``httpx.Response`` objects; 4xx/5xx raise :mod:`determined_common.api.errors`.
"""

import os
import webbrowser
from typing import Any, Dict, Optional

import httpx

from determined_common.api import errors


def default_master() -> str:
    return os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"


def parse_master_address(master_address: str) -> Any:
    """``localhost:8080`` -> a parsed URL (``urllib.parse.ParseResult``) with a scheme."""
    from urllib.parse import urlparse

    from determined.common.api import normalize_master_url

    return urlparse(normalize_master_url(master_address))


def make_url(master_address: str, suffix: str) -> str:
    """The URL of ``suffix`` on the master at ``master_address``."""
    base = parse_master_address(master_address).geturl().rstrip("/")
    suffix = suffix.lstrip("/")
    if not suffix.startswith(("api/", "proxy/", "docs")):
        suffix = "api/v1/" + suffix
    return f"{base}/{suffix}"


def add_token_to_headers(headers: Dict[str, str]) -> Dict[str, str]:
    """``headers`` plus the session token of the active user of ``$DET_MASTER``."""
    from determined_common.api.authentication import Authentication

    token = Authentication.instance().get_session_token()
    return {**headers, "Authorization": f"Bearer {token}"}


def do_request(
    method: str,
    host: str,
    path: str,
    params: Optional[Dict[str, Any]] = None,
    body: Optional[Any] = None,
    headers: Optional[Dict[str, str]] = None,
    authenticated: bool = True,
) -> httpx.Response:
    """Send one request; raise ``errors.*`` for an unreachable master or a 4xx/5xx."""
    headers = dict(headers or {})
    if authenticated:
        from determined.common.api import Authenticator, normalize_master_url

        url = normalize_master_url(host)
        headers["Authorization"] = f"Bearer {Authenticator(url).token()}"
    try:
        r = httpx.request(method, make_url(host, path), params=params, json=body,
                          headers=headers, timeout=60)
    except httpx.TransportError as e:
        raise errors.MasterNotFoundException(f"no master is reachable at {host}: {e}") from None
    if r.status_code == 401:
        raise errors.UnauthenticatedException()
    if r.status_code == 404:
        raise errors.NotFoundException(f"{method} {path}: not found: {r.text}", 404)
    if r.status_code >= 400:
        raise errors.BadRequestException(f"{method} {path}: HTTP {r.status_code}: {r.text}",
                                         r.status_code)
    return r


def get(host: str, path: str, params: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None, authenticated: bool = True) -> httpx.Response:
    return do_request("GET", host, path, params=params, headers=headers,
                      authenticated=authenticated)


def delete(host: str, path: str, params: Optional[Dict[str, Any]] = None,
           headers: Optional[Dict[str, str]] = None, authenticated: bool = True) -> httpx.Response:
    return do_request("DELETE", host, path, params=params, headers=headers,
                      authenticated=authenticated)


def post(host: str, path: str, body: Optional[Any] = None,
         headers: Optional[Dict[str, str]] = None, authenticated: bool = True) -> httpx.Response:
    return do_request("POST", host, path, body=body, headers=headers,
                      authenticated=authenticated)


def patch(host: str, path: str, body: Optional[Any] = None,
          headers: Optional[Dict[str, str]] = None, authenticated: bool = True) -> httpx.Response:
    return do_request("PATCH", host, path, body=body, headers=headers,
                      authenticated=authenticated)


def put(host: str, path: str, body: Optional[Any] = None,
        headers: Optional[Dict[str, str]] = None, authenticated: bool = True) -> httpx.Response:
    return do_request("PUT", host, path, body=body, headers=headers,
                      authenticated=authenticated)


def open(host: str, path: str) -> str:  # noqa: A001 - upstream name
    """Open ``path`` of the master in a web browser; return its URL."""
    url = make_url(host, path) if path.startswith(("api/", "proxy/")) else \
        parse_master_address(host).geturl().rstrip("/") + "/" + path.lstrip("/")
    webbrowser.open(url)
    return url


class WebSocket:
    """A message stream (upstream: a WebSocket). Iterating yields decoded JSON messages."""

    def __init__(self, socket: Any):
        self.socket = socket

    def __enter__(self) -> "WebSocket":
        return self

    def __exit__(self, *exc: Any) -> None:
        close = getattr(self.socket, "close", None)
        if close:
            close()

    def __iter__(self) -> Any:
        return iter(self.socket)


def ws(host: str, path: str) -> WebSocket:
    """This master has no WebSocket routes: log streams are long polls
    (``follow_experiment_logs``). Raises a clear error naming the path."""
    raise errors.BadRequestException(
        f"ws {path}: this master serves no WebSockets; use follow_experiment_logs or the REST "
        "API's long-polling routes", 404)
