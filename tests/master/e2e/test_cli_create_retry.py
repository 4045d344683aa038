"""``det e create`` when the master stored the experiment but its answer never came
(the master died, the connection dropped): the CLI retries with the same idempotency
key and ends with exactly one experiment, printing its id. A real master behind a
real TCP proxy on loopback that relays the first ``POST /api/v1/experiments`` to the
master, reads the master's whole answer, and closes the CLI's connection instead of
passing it on."""

import socket
import threading
import time
from typing import Callable, List, Optional, Tuple

import httpx
import yaml

from det_cli_testing import run_det
from master_testing import OlderMasterProcess, older_source

# The commit before the master honoured Idempotency-Key (52991c9).
PRE_IDEMPOTENT_COMMIT = "a353bca"

_CREATE = b"POST /api/v1/experiments "


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


class DroppingProxy:
    """Relays HTTP/1.1 requests one at a time to ``upstream``; the first create's answer
    is read from the master and dropped (the CLI's connection is closed)."""

    def __init__(self, upstream_port: int, on_drop: Optional[Callable[[], None]] = None):
        self.upstream_port = upstream_port
        self.on_drop = on_drop
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
                upstream.sendall(request)
                response, from_master = _read_message(upstream, from_master)
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


def test_create_retried_after_lost_answer_makes_one_experiment(master_factory, tiny_dir,
                                                               tmp_path):
    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    proxy = DroppingProxy(master.port)
    try:
        out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                       path, tiny_dir], timeout=120)
    finally:
        proxy.close()
    assert out.returncode == 0, out.stdout + out.stderr
    assert proxy.dropped is not None and b" 201 " in proxy.dropped.split(b"\r\n")[0]
    assert len(proxy.creates) == 2  # the first (answer dropped) and one retry
    keys = [line for request in proxy.creates for line in request.split(b"\r\n")
            if line.lower().startswith(b"idempotency-key:")]
    assert len(keys) == 2 and keys[0] == keys[1]
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert len(ids) == 1
    assert out.stdout.strip() == f"Created experiment {ids[0]}"
    assert out.stderr.count("retrying") == 1, out.stderr


def test_create_without_master_is_not_retried(tiny_dir):
    """No connection at the first try: the master never saw the create, so the CLI says
    so at once (no retries, no retry line)."""
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    out = run_det(["-m", f"127.0.0.1:{port}", "e", "create", tiny_dir / "const.yaml",
                   tiny_dir], timeout=60)
    assert out.returncode == 1 and "no master is reachable" in out.stderr, out.stderr
    assert "retrying" not in out.stderr, out.stderr


def test_sdk_create_retried_after_lost_answer_makes_one_experiment(master_factory, tiny_dir,
                                                                   capfd):
    """The SDK creates through the same client: one experiment, its id returned."""
    from determined.experimental import Determined

    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    proxy = DroppingProxy(master.port)
    try:
        ref = Determined(master=f"http://127.0.0.1:{proxy.port}").create_experiment(
            config, str(tiny_dir), activate=False)
    finally:
        proxy.close()
    assert proxy.dropped is not None and len(proxy.creates) == 2
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert ids == [ref.id]
    assert capfd.readouterr().err.count("retrying") == 1


def test_create_answered_by_a_master_killed_and_started_again_makes_one_experiment(
        master_factory, tiny_dir, tmp_path):
    """The master is SIGKILLed right after it stored the create (its answer never sent)
    and is started again 5 s later on the same port and data: the CLI's retries span the
    restart and end with the one experiment stored before the kill."""
    master = master_factory(slots=0)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    restarted = threading.Event()

    def kill_then_restart():
        master.sigkill()

        def later():
            time.sleep(5)
            master.start()
            restarted.set()
        threading.Thread(target=later, daemon=True).start()

    proxy = DroppingProxy(master.port, on_drop=kill_then_restart)
    try:
        out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                       path, tiny_dir], timeout=180)
    finally:
        proxy.close()
    assert restarted.is_set(), out.stdout + out.stderr
    assert out.returncode == 0, out.stdout + out.stderr
    with master.client() as api:
        ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    assert len(ids) == 1
    assert out.stdout.strip() == f"Created experiment {ids[0]}"
    assert out.stderr.count("retrying for up to 30 s") == 1, out.stderr


def test_create_against_a_master_ignoring_the_key_is_not_retried(tiny_dir, tmp_path):
    """A master from before idempotent creates ignores the key: a retry would make a
    second experiment. The CLI asks ``GET /master`` before retrying, does not retry, and
    says the experiment may exist."""
    src = older_source(PRE_IDEMPOTENT_COMMIT, tmp_path / "old")
    (tmp_path / "master").mkdir()
    master = OlderMasterProcess(str(tmp_path / "master"), src).start()
    try:
        info = httpx.get(master.url + "/api/v1/master", timeout=30).json()
        assert "idempotent_create" not in info, info  # really the older master
        proxy = DroppingProxy(master.port)
        try:
            out = run_det(["-m", f"http://127.0.0.1:{proxy.port}", "e", "create", "--paused",
                           tiny_dir / "const.yaml", tiny_dir], timeout=120)
        finally:
            proxy.close()
        with master.client() as api:
            ids = [e["id"] for e in api.get("/experiments").json()["experiments"]]
    finally:
        master.stop()
    assert len(proxy.creates) == 1 and len(ids) == 1, (proxy.creates, ids, out.stderr)
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"Not retried: the master at http://127.0.0.1:{proxy.port} ignores the " \
           "Idempotency-Key header" in out.stderr, out.stderr
    assert "det experiment list" in out.stderr and "retrying" not in out.stderr, out.stderr


def test_the_master_says_it_honours_the_key(master_factory):
    master = master_factory(slots=0)
    assert httpx.get(master.url + "/api/v1/master", timeout=30).json()["idempotent_create"]
