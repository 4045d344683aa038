"""The proxy: ``/proxy/<task-id>/...`` forwards HTTP and websockets to a task's service.

Notebooks, shells and TensorBoards listen on a loopback port of the master's machine
or on a remote agent's own address (the agent reports it); the master is their only
way in. Every request needs a logged-in user who owns the task
or is an admin -- never the anonymous user, since a notebook or shell runs code:

- ``Authorization: Bearer <session token>`` (the CLI, scripts), or
- the cookie ``det_proxy_token``, which a first request with ``?det_token=<session
  token>`` sets (the URL ``det notebook open`` prints for a browser); the response
  redirects to the same URL without the token.

401 without a valid login, 403 for another user's task, 404 for a task that is not
running (or not a service), 502 when the service does not answer (yet). Forwarded
requests lose the caller's ``Authorization`` and cookie of the master and get the
task's own token instead (``Authorization: token ...``; Jupyter, the shell server and
TensorBoard check it), so users never need it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, urlencode

import fastapi
import httpx
from fastapi import Request, WebSocket
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse
from starlette.background import BackgroundTask
from starlette.routing import WebSocketRoute

from determined.master._core import Master
from determined.master.db import NotFoundError, User
from determined.master.tasks import SERVICE_KINDS, LiveTask

__all__ = ["proxy_router"]

logger = logging.getLogger("determined.master")

COOKIE = "det_proxy_token"
QUERY = "det_token"
_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "authorization", "content-length"}
_WS_SKIP = _HOP | {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                   "sec-websocket-protocol", "cookie", "origin"}


class _Denied(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _token(headers: Any, cookies: Dict[str, str], query: Dict[str, str]) -> Optional[str]:
    auth = headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return query.get(QUERY) or cookies.get(COOKIE)


def _hostport(task: LiveTask) -> str:
    """Where the task's service listens: loopback or its remote agent's address."""
    host = f"[{task.host}]" if ":" in task.host else task.host
    return f"{host}:{task.port}"


def _cookie_header(cookies: Dict[str, str]) -> Optional[str]:
    kept = [f"{k}={v}" for k, v in cookies.items() if k != COOKIE]
    return "; ".join(kept) or None


def _request_body(request: Request, headers: List[Tuple[str, str]]) -> Any:
    """The body to forward: none for a request without one (a GET sent on chunked would
    be refused by some services, e.g. the shell's websocket server), the stream with its
    ``Content-Length`` kept (``headers`` gets it) or, when the caller sent it chunked,
    chunked."""
    length = request.headers.get("content-length")
    if length is not None:
        headers.append(("content-length", length))
        return request.stream() if length != "0" else b""
    if "chunked" in request.headers.get("transfer-encoding", "").lower():
        return request.stream()
    return None


def proxy_router(master: Master) -> fastapi.APIRouter:
    """Routes ``/proxy/{task_id}/{path}`` for HTTP and websockets."""
    router = fastapi.APIRouter(tags=["proxy"])
    client = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0))

    def authorize(token: Optional[str], task_id: str) -> Tuple[User, LiveTask]:
        if not token:
            raise _Denied(401, "The proxy needs a logged-in user: send 'Authorization: "
                               f"Bearer <token>' or open the URL with ?{QUERY}=<token> "
                               "(`det notebook open ID` prints it)")
        user = master.store.session_user(token)
        if user is None:
            raise _Denied(401, "Invalid or expired session token: log in again")
        if not user.active:
            raise _Denied(403, f"User {user.username!r} is deactivated")
        try:
            record = master.store.get_task(task_id)
        except NotFoundError:
            raise _Denied(404, f"task {task_id!r} not found") from None
        if not (user.admin or user.username == record.owner):
            raise _Denied(403, f"User {user.username!r} may not open task {task_id}: it "
                               f"belongs to {record.owner!r}")
        task = master.tasks.target(task_id)
        if task is None:
            raise _Denied(404, f"Task {task_id} ({record.kind}) is {record.state}: nothing "
                               "to proxy to")
        master.tasks.touch(task_id)
        return user, task

    def upstream_headers(task: LiveTask, headers: Any, cookies: Dict[str, str],
                         skip: Any) -> List[Tuple[str, str]]:
        out = [(k, v) for k, v in headers.items() if k.lower() not in skip and k.lower() != "cookie"]
        cookie = _cookie_header(cookies)
        if cookie and "cookie" not in skip:
            out.append(("cookie", cookie))
        if task.kind in SERVICE_KINDS:  # they check the task's own token
            out.append(("authorization", f"token {task.token}"))
        return out

    @router.api_route("/proxy/{task_id}", methods=["GET", "HEAD"], include_in_schema=False)
    def bare(task_id: str, request: Request) -> RedirectResponse:
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"/proxy/{task_id}/{query}", status_code=307)

    async def proxy_http(task_id: str, path: str, request: Request) -> Any:
        """Forward a request to the task's service (same path, the proxy prefix kept)."""
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        try:
            _, task = await asyncio.to_thread(
                authorize, _token(request.headers, request.cookies, query), task_id)
        except _Denied as e:
            return JSONResponse({"error": e.message}, status_code=e.status)
        if QUERY in query:  # a browser's first visit: keep the login in a cookie instead
            rest = urlencode([(k, v) for k, v in parse_qsl(request.url.query,
                                                           keep_blank_values=True)
                              if k != QUERY])
            response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""),
                                        status_code=303)
            response.set_cookie(COOKIE, query[QUERY], httponly=True, samesite="lax",
                                path=f"/proxy/{task_id}/")
            return response
        url = f"http://{_hostport(task)}{request.url.path}"
        if request.url.query:
            url += f"?{request.url.query}"
        headers = upstream_headers(task, request.headers, request.cookies, _HOP)
        upstream = client.build_request(request.method, url, headers=headers,
                                        content=_request_body(request, headers))
        master.tasks.opened(task_id)
        logger.debug("proxy %s %s -> task %s", request.method, request.url.path, task_id)
        try:
            response = await client.send(upstream, stream=True)
        except httpx.HTTPError as e:
            master.tasks.closed(task_id)
            return JSONResponse({"error": f"Task {task_id} does not answer (yet): {e}"},
                                status_code=502)
        out_headers = [(k, v) for k, v in response.headers.multi_items()
                       if k.lower() not in ("connection", "keep-alive", "transfer-encoding")]

        ended = False

        async def done() -> None:  # once, whether the body was sent whole or not
            nonlocal ended
            if not ended:
                ended = True
                try:
                    await response.aclose()
                finally:
                    master.tasks.closed(task_id)

        async def body() -> Any:
            try:
                async for chunk in response.aiter_raw():
                    yield chunk
            finally:
                await done()

        streamed = StreamingResponse(body(), status_code=response.status_code,
                                     background=BackgroundTask(done))
        streamed.raw_headers = [(k.encode("latin-1"), v.encode("latin-1"))
                                for k, v in out_headers]  # repeated Set-Cookie kept
        return streamed

    # A route per method, each with its own operation id: one route of seven methods
    # shares one id, and FastAPI warns (logged as an ERROR) when /docs reads the schema.
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"):
        router.add_api_route("/proxy/{task_id}/{path:path}", proxy_http, methods=[method],
                             operation_id=f"proxy_http_{method.lower()}")

    async def proxy_ws(websocket: WebSocket) -> None:
        """Relay a websocket (terminal, Jupyter kernel) in both directions."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        task_id = websocket.path_params["task_id"]

        query = dict(websocket.query_params)
        try:
            _, task = await asyncio.to_thread(
                authorize, _token(websocket.headers, websocket.cookies, query), task_id)
        except _Denied as e:
            await websocket.close(code=4000 + e.status, reason=e.message[:120])
            return
        url = f"ws://{_hostport(task)}{websocket.url.path}"
        if websocket.url.query:
            url += f"?{websocket.url.query}"
        protocols = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "")
                     .split(",") if p.strip()]
        headers = upstream_headers(task, websocket.headers, websocket.cookies, _WS_SKIP)
        try:
            upstream = await connect(url, additional_headers=headers,
                                     subprotocols=protocols or None, max_size=None,
                                     origin=f"http://{_hostport(task)}")
        except Exception as e:
            await websocket.close(code=1011, reason=f"task does not answer: {e}"[:120])
            return
        await websocket.accept(subprotocol=upstream.subprotocol)
        master.tasks.opened(task_id)

        async def client_to_task() -> None:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                master.tasks.touch(task_id)
                if message.get("bytes") is not None:
                    await upstream.send(message["bytes"])
                elif message.get("text") is not None:
                    await upstream.send(message["text"])

        async def task_to_client() -> None:
            try:
                async for message in upstream:
                    if isinstance(message, bytes):
                        await websocket.send_bytes(message)
                    else:
                        await websocket.send_text(message)
            except ConnectionClosed:
                pass

        tasks = [asyncio.ensure_future(client_to_task()), asyncio.ensure_future(task_to_client())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            master.tasks.closed(task_id)
            for t in tasks:
                t.cancel()
            await upstream.close()
            try:
                await websocket.close()
            except Exception:
                pass

    # A plain Starlette route: application-wide FastAPI dependencies (written for HTTP
    # requests) do not apply to it.
    router.routes.append(WebSocketRoute("/proxy/{task_id}/{path:path}", proxy_ws))
    return router

