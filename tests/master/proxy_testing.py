"""A real HTTP/1.1 proxy on loopback between a client (the CLI, the SDK, an agent) and a
real master, for what a network or a master of another release does to them: it can
drop the first experiment create's answer after the master stored it (the master died
or the connection broke), and answer ``GET /master`` as an older master would."""

import json
import socket
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["DroppingProxy"]

_CREATE = b"POST /api/v1/experiments "
_MASTER = b"GET /api/v1/master "


def _read_until(sock: socket.socket, buf: bytes, marker: bytes) -> Tuple[bytes, bytes]:
    """``(through marker, rest)`` from ``buf`` and what ``sock`` sends next."""
    while marker not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    end = buf.index(marker) + len(marker)
    return buf[:end], buf[end:]


def _read_exactly(sock: socket.socket, buf: bytes, n: int) -> Tuple[bytes, bytes]:
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf[:n], buf[n:]


def _read_message(sock: socket.socket, buf: bytes) -> Tuple[bytes, bytes]:
    """One HTTP/1.1 request or response (Content-Length or chunked body) and the rest."""
    head, buf = _read_until(sock, buf, b"\r\n\r\n")
    fields = {line.split(b":", 1)[0].strip().lower(): line.split(b":", 1)[1].strip()
              for line in head.split(b"\r\n")[1:] if b":" in line}
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = b""
        while True:
            size_line, buf = _read_until(sock, buf, b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            chunk, buf = _read_exactly(sock, buf, size + 2)
            body += size_line + chunk
            if size == 0:
                return head + body, buf
    length = int(fields.get(b"content-length", b"0"))
    body, buf = _read_exactly(sock, buf, length)
    return head + body, buf


def _rewrite_json(response: bytes, change: Callable[[Dict[str, Any]], Dict[str, Any]]) -> bytes:
    """An HTTP response with a JSON body (Content-Length, not compressed) changed."""
    head, body = response.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    assert not any(line.lower().startswith((b"content-encoding:", b"transfer-encoding:"))
                   for line in lines), head
    body = json.dumps(change(json.loads(body))).encode()
    lines = [line for line in lines if not line.lower().startswith(b"content-length:")]
    return b"\r\n".join([*lines, b"content-length: %d" % len(body)]) + b"\r\n\r\n" + body


class DroppingProxy:
    """Relays HTTP/1.1 requests one at a time to ``upstream``; the first create's answer
    is read from the master and dropped (the client's connection is closed), then
    ``on_drop`` runs. ``master_info`` rewrites the JSON of ``GET /master`` answers (how a
    master of an older release answers: fields it did not have yet left out)."""

    def __init__(self, upstream_port: int, on_drop: Optional[Callable[[], None]] = None,
                 master_info: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None):
        self.upstream_port = upstream_port
        self.on_drop = on_drop
        self.master_info = master_info
        self.requests: List[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dropped: Optional[bytes] = None
        self.creates: List[bytes] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:  # the master is down: the CLI's connection closes unanswered
            client.close()
            return
        from_client = from_master = b""
        try:
            while True:
                request, from_client = _read_message(client, from_client)
                with self._lock:
                    self.requests.append(request.split(b"\r\n", 1)[0])
                upstream.sendall(request)
                response, from_master = _read_message(upstream, from_master)
                if request.startswith(_MASTER) and self.master_info is not None:
                    response = _rewrite_json(response, self.master_info)
                if request.startswith(_CREATE):
                    with self._lock:
                        self.creates.append(request)
                        drop = self.dropped is None
                        if drop:
                            self.dropped = response
                    if drop:
                        if self.on_drop is not None:
                            self.on_drop()
                        return  # the master stored it; the CLI never hears
                client.sendall(response)
        except (ConnectionError, OSError):
            pass
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self.listener.close()
