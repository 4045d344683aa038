"""An ASGI middleware refusing request bodies over ``limits.max_request_bytes`` with a
413 before any route reads them: by ``Content-Length`` at once, and a body without
one (chunked) is read up to the limit only."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Dict, List, Optional

__all__ = ["BodyLimit"]

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]


class BodyLimit:
    """Wraps ``app``; ``limit`` returns the current limit in bytes."""

    def __init__(self, app: Any, limit: Callable[[], int]):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        length = _content_length(scope)
        if length is not None and length > limit:
            await _refuse(send, limit, length)
            return
        if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            messages: List[Dict[str, Any]] = []
            size = 0
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request":
                    break
                size += len(message.get("body", b""))
                if size > limit:
                    await _refuse(send, limit, None)
                    return
                if not message.get("more_body", False):
                    break
            replay = iter(messages)

            async def replayed() -> Dict[str, Any]:
                return next(replay, None) or await receive()

            await self.app(scope, replayed, send)
            return
        await self.app(scope, receive, send)


def _content_length(scope: Scope) -> Optional[int]:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, limit: int, length: Optional[int]) -> None:
    size = f"{length} bytes" if length is not None else f"over {limit} bytes"
    body = json.dumps({"error": f"The request body is {size}; the limit is {limit} bytes "
                                "(the master's limits.max_request_bytes)"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
